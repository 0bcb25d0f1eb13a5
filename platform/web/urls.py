from django.urls import path

import tournaments.url_converters  # noqa: F401 (registers dbid, botname, pool)
from web import live, views, views_account, views_hosting, views_organise, views_play

app_name = "web"

urlpatterns = [
    path("", views.home, name="home"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("tournaments/", views.tournament_list, name="tournament_list"),
    path("tournaments/<slug:slug>/", views.tournament_detail, name="tournament_detail"),
    path("tournaments/<slug:slug>/progress.json", views.tournament_progress_json, name="tournament_progress"),
    path("tournaments/<slug:slug>/live/", live.tournament_progress_stream, name="tournament_live"),
    path("tournaments/<slug:slug>/games/", views.tournament_games, name="tournament_games"),
    path("tournaments/<slug:slug>/deals/", views.tournament_deals, name="tournament_deals"),
    path("fair-play/", views.fair_play, name="fair_play"),
    path("leaderboards/", views.leaderboards, name="leaderboards"),
    path("leaderboards/<pool:pool>/", views.leaderboard, name="leaderboard"),
    path("bots/", views.bot_list, name="bot_list"),
    path("bots/<botname:name>/", views.bot_detail, name="bot_detail"),
    path("bots/<botname:name>/games/", views.bot_games, name="bot_games"),
    path("games/<dbid:game_id>/", views.game_detail, name="game_detail"),
    path("games/<dbid:game_id>/replay.json", views.game_replay_json, name="game_replay"),
    # casual tables: a person against bots (docs/web.md, "Play")
    path("play/", views_play.play_home, name="play"),
    path("play/<dbid:table_id>/", views_play.play_table, name="play_table"),
    path("play/<dbid:table_id>/state.json", views_play.play_state, name="play_state"),
    path("play/<dbid:table_id>/live/", views_play.play_stream, name="play_stream"),
    path("play/<dbid:table_id>/move/", views_play.play_move, name="play_move"),
    path("play/<dbid:table_id>/leave/", views_play.play_leave, name="play_leave"),
    path("play/<dbid:table_id>/games/<int:index>/", views_play.play_game, name="play_game"),
    path("play/<dbid:table_id>/games/<int:index>/replay.json", views_play.play_game_replay, name="play_game_replay"),
    path("me/bots/<botname:name>/casual/", views_play.bot_casual_consent, name="bot_casual_consent"),
    # accounts and bot registration
    path("accounts/signup/", views_account.signup, name="signup"),
    path("accounts/login/", views_account.SignInView.as_view(), name="login"),
    path("accounts/logout/", views_account.SignOutView.as_view(), name="logout"),
    path("accounts/confirm/<str:uidb64>/<str:token>/", views_account.email_confirm, name="email_confirm"),
    path("me/account/", views_account.account, name="account"),
    path("me/bots/", views_account.my_bots, name="my_bots"),
    path("me/bots/new/", views_account.bot_register, name="bot_register"),
    path("me/bots/<botname:name>/token/", views_account.bot_token_rotate, name="bot_token_rotate"),
    path("me/bots/<botname:name>/edit/", views_account.bot_edit, name="bot_edit"),
    path("me/bots/<botname:name>/versions/", views_hosting.bot_submit, name="bot_submit"),
    path("me/bots/<botname:name>/hosting/", views_hosting.bot_hosting, name="bot_hosting"),
    path("me/bots/<botname:name>/retire/", views_account.bot_retire, name="bot_retire"),
    path("me/tokens/", views_account.api_tokens, name="api_tokens"),
    path("me/tokens/<dbid:token_id>/revoke/", views_account.api_token_revoke, name="api_token_revoke"),
    # organisers
    path("organise/", views_organise.organise, name="organise"),
    path("organise/new/", views_organise.tournament_new, name="tournament_new"),
    path("organise/<slug:slug>/edit/", views_organise.tournament_edit, name="tournament_edit"),
    path("organise/<slug:slug>/start/", views_organise.tournament_start, name="tournament_start"),
    path("organise/<slug:slug>/cancel/", views_organise.tournament_cancel, name="tournament_cancel"),
    path("organise/<slug:slug>/collusion/", views_organise.tournament_collusion, name="tournament_collusion"),
]
