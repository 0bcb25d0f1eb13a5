"""Routes of the JSON API, mounted at /api/v1/ (schema at /api/v1/schema/, Swagger UI at
/api/v1/docs/: routed by the site, tienlen_site.urls)."""

from django.urls import path

import tournaments.url_converters  # noqa: F401 (registers dbid, botname, pool)
from tournaments.api import views, views_collusion, views_exports, views_hosting, views_verification

app_name = "api"

urlpatterns = [
    path("", views.ApiRootView.as_view(), name="root"),
    path("tokens/", views.ApiTokenListView.as_view(), name="tokens"),
    path("tokens/<dbid:token_id>/", views.ApiTokenRevokeView.as_view(), name="token-revoke"),
    path("account/", views_verification.AccountView.as_view(), name="account"),
    path("accounts/<str:username>/approval/", views_verification.AccountApprovalView.as_view(), name="account-approval"),
    path("bots/", views.BotListView.as_view(), name="bots"),
    path("bots/<botname:name>/", views.BotDetailView.as_view(), name="bot"),
    path("bots/<botname:name>/rotate-token/", views.BotRotateTokenView.as_view(), name="bot-rotate"),
    path("bots/<botname:name>/revoke/", views.BotRevokeView.as_view(), name="bot-revoke"),
    path("bots/<botname:name>/versions/", views_hosting.BotVersionsView.as_view(), name="bot-versions"),
    path("bots/<botname:name>/versions/<int:seq>/", views_hosting.BotVersionDetailView.as_view(), name="bot-version"),
    path("bots/<botname:name>/hosting/", views_hosting.BotHostingView.as_view(), name="bot-hosting"),
    path("bots/<botname:name>/sessions/", views_hosting.BotSessionsView.as_view(), name="bot-sessions"),
    path("bots/<botname:name>/ratings/", views.BotRatingsView.as_view(), name="bot-ratings"),
    path("bots/<botname:name>/ratings/<pool:pool>/", views.BotRatingHistoryView.as_view(), name="bot-rating-history"),
    path("bots/<botname:name>/games/", views.BotGamesView.as_view(), name="bot-games"),
    path("bots/<botname:name>/vs/<botname:other>/", views.HeadToHeadView.as_view(), name="head-to-head"),
    path("tournaments/", views.TournamentListView.as_view(), name="tournaments"),
    path("tournaments/<slug:slug>/", views.TournamentDetailView.as_view(), name="tournament"),
    path("tournaments/<slug:slug>/progress/", views.TournamentProgressView.as_view(), name="progress"),
    path("tournaments/<slug:slug>/entrants/", views.TournamentEntrantsView.as_view(), name="entrants"),
    path("tournaments/<slug:slug>/entrants/<botname:bot>/", views.TournamentEntrantDeleteView.as_view(), name="entrant"),
    path("tournaments/<slug:slug>/entrants/<botname:bot>/publish-notes/", views.EntrantNotesPublishView.as_view(),
         name="entrant-notes-publish"),
    path("tournaments/<slug:slug>/join/", views.LadderJoinView.as_view(), name="join"),
    path("tournaments/<slug:slug>/leave/", views.LadderLeaveView.as_view(), name="leave"),
    path("tournaments/<slug:slug>/start/", views.TournamentStartView.as_view(), name="start"),
    path("tournaments/<slug:slug>/cancel/", views.TournamentCancelView.as_view(), name="cancel"),
    path("tournaments/<slug:slug>/standings/", views.TournamentStandingsView.as_view(), name="standings"),
    path("tournaments/<slug:slug>/seasons/", views.TournamentSeasonsView.as_view(), name="seasons"),
    path("tournaments/<slug:slug>/seasons/<int:number>/", views.TournamentSeasonView.as_view(), name="season"),
    path("tournaments/<slug:slug>/standings.csv", views_exports.TournamentStandingsCsvView.as_view(), name="standings-csv"),
    path(
        "tournaments/<slug:slug>/cross-table.csv",
        views_exports.TournamentCrossTableCsvView.as_view(),
        name="cross-table-csv",
    ),
    path("tournaments/<slug:slug>/games.csv", views_exports.TournamentGamesCsvView.as_view(), name="games-csv"),
    path("tournaments/<slug:slug>/replays.zip", views_exports.TournamentReplaysZipView.as_view(), name="replays-zip"),
    path(
        "tournaments/<slug:slug>/standings/luck-adjusted/",
        views.TournamentLuckAdjustedView.as_view(),
        name="standings-luck-adjusted",
    ),
    path("tournaments/<slug:slug>/collusion/", views_collusion.TournamentCollusionView.as_view(), name="collusion"),
    path("tournaments/<slug:slug>/cross-table/", views.TournamentCrossTableView.as_view(), name="cross-table"),
    path("tournaments/<slug:slug>/bracket/", views.TournamentBracketView.as_view(), name="bracket"),
    path("tournaments/<slug:slug>/tables/", views.TournamentTablesView.as_view(), name="tables"),
    path("tournaments/<slug:slug>/games/", views.TournamentGamesView.as_view(), name="games"),
    path("tournaments/<slug:slug>/deals/", views.TournamentDealsView.as_view(), name="deals"),
    path("pools/", views.PoolListView.as_view(), name="pools"),
    path("pools/<pool:pool>/leaderboard/", views.PoolLeaderboardView.as_view(), name="leaderboard"),
    path("games/<dbid:game_id>/", views.GameDetailView.as_view(), name="game"),
    path("games/<dbid:game_id>/replay/", views.GameReplayView.as_view(), name="replay"),
    path("games/<dbid:game_id>/proof/", views.GameProofView.as_view(), name="game-proof"),
]
