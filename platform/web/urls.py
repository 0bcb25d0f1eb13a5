from django.urls import path

import tournaments.url_converters  # noqa: F401 (registers dbid, botname, pool)
from web import live, views, views_account, views_entries, views_hosting, views_organise

app_name = "web"

urlpatterns = [
    path("", views.home, name="home"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("tournaments/", views.tournament_list, name="tournament_list"),
    path("tournaments/<slug:slug>/", views.tournament_detail, name="tournament_detail"),
    path("tournaments/<slug:slug>/progress.json", views.tournament_progress_json, name="tournament_progress"),
    path("tournaments/<slug:slug>/live/", live.tournament_progress_stream, name="tournament_live"),
    path("tournaments/<slug:slug>/join/", views_entries.tournament_join, name="tournament_join"),
    path("tournaments/<slug:slug>/withdraw/", views_entries.tournament_withdraw, name="tournament_withdraw"),
    path("tournaments/<slug:slug>/games/", views.tournament_games, name="tournament_games"),
    path("tournaments/<slug:slug>/deals/", views.tournament_deals, name="tournament_deals"),
    path("tournaments/<slug:slug>/seasons/<int:number>/", views.tournament_season, name="tournament_season"),
    path("fair-play/", views.fair_play, name="fair_play"),
    path("leaderboards/", views.leaderboards, name="leaderboards"),
    path("leaderboards/<pool:pool>/", views.leaderboard, name="leaderboard"),
    path("bots/", views.bot_list, name="bot_list"),
    path("bots/<botname:name>/", views.bot_detail, name="bot_detail"),
    path("bots/<botname:name>/games/", views.bot_games, name="bot_games"),
    path("games/<dbid:game_id>/", views.game_detail, name="game_detail"),
    path("games/<dbid:game_id>/replay.json", views.game_replay_json, name="game_replay"),
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
    path("me/bots/<botname:name>/gate/", views_hosting.bot_gate, name="bot_gate"),
    path("me/bots/<botname:name>/versions/<int:seq>/promote/", views_hosting.bot_promote, name="bot_promote"),
    path("me/bots/<botname:name>/storage/clear/", views_hosting.bot_storage_clear_view, name="bot_storage_clear"),
    path("me/bots/<botname:name>/retire/", views_account.bot_retire, name="bot_retire"),
    path("me/bots/<botname:name>/invitations/<slug:slug>/accept/", views_entries.invitation_accept,
         name="invitation_accept"),
    path("me/bots/<botname:name>/invitations/<slug:slug>/decline/", views_entries.invitation_decline,
         name="invitation_decline"),
    path("me/tokens/", views_account.api_tokens, name="api_tokens"),
    path("me/tokens/<dbid:token_id>/revoke/", views_account.api_token_revoke, name="api_token_revoke"),
    # organisers
    path("organise/", views_organise.organise, name="organise"),
    path("organise/new/", views_organise.tournament_new, name="tournament_new"),
    path("organise/<slug:slug>/edit/", views_organise.tournament_edit, name="tournament_edit"),
    path("organise/<slug:slug>/start/", views_organise.tournament_start, name="tournament_start"),
    path("organise/<slug:slug>/cancel/", views_organise.tournament_cancel, name="tournament_cancel"),
    path("organise/<slug:slug>/disqualify/", views_entries.entrant_disqualify, name="entrant_disqualify"),
    path("organise/<slug:slug>/collusion/", views_organise.tournament_collusion, name="tournament_collusion"),
]
