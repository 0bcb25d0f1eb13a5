"""API views: parse input, check permission, call a service or selector, shape the output.

Service errors become HTTP errors here: Django's ValidationError -> 400 with field errors,
PermissionError -> 403, a missing object -> 404.
"""

from __future__ import annotations

import re

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    inline_serializer,
)
from rest_framework import authentication, exceptions, permissions, serializers, status
from rest_framework.generics import GenericAPIView
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.settings import api_settings

from bots_sdk.rules import ReplayError
from tournaments import sealing
from tournaments.api import serializers as s
from tournaments.api.authentication import ApiTokenAuthentication, PasswordAuthentication
from tournaments.models import Bot, Game, RatingPool, Replay, Tournament
from tournaments.selectors.accounts import api_tokens
from tournaments.selectors.adjusted import tournament_luck_adjusted
from tournaments.selectors.bots import bot_find, bot_list, bot_page, head_to_head
from tournaments.selectors.brackets import tournament_bracket
from tournaments.selectors.cross_table import tournament_cross_table
from tournaments.selectors.deals import deal_list
from tournaments.selectors.entries import bot_invitations
from tournaments.selectors.games import game_get, game_list, game_proof, game_replay
from tournaments.selectors.ratings import (
    PoolNameInvalid,
    bot_rating_history,
    pool_by_name,
    pool_leaderboard,
    pool_list,
)
from tournaments.selectors.standings import tournament_standings
from tournaments.selectors.tables import table_list
from tournaments.selectors.tournaments import (
    tournament_get,
    tournament_list,
    tournament_notices,
    tournament_progress,
    tournament_rows,
    tournament_slug_taken,
)
from tournaments.services.accounts import (
    api_token_create,
    api_token_revoke,
    bot_create,
    bot_revoke,
    bot_token_rotate,
    bot_update,
    user_can_manage_tournament,
    user_is_organiser,
)
from tournaments.services.entries import (
    entrant_disqualify,
    entry_join,
    entry_withdraw,
    invitation_respond,
    tournament_entrant_enter,
)
from tournaments.services.notes import entrant_notes_publish
from tournaments.services.tournaments import (
    tournament_cancel,
    tournament_create,
    tournament_entrant_remove,
    tournament_start,
    tournament_update,
)


class NoInput(serializers.Serializer):
    # The body of a POST that takes none (the browsable API shows an empty form).
    pass


# No docstring on purpose: the OpenAPI schema would repeat it as every endpoint's description.
class ServiceAPIView(GenericAPIView):
    # Maps service exceptions to HTTP errors, and tells the browsable API what it asks.
    # The browsable API (every URL opened in a browser) builds a form per write method from
    # `get_serializer()`: `input_serializers` names the serializer each method reads (the
    # output one would offer the wrong fields). For list responses it asks `get_queryset()`
    # for its filter form: the queryset the page was cut from.

    input_serializers: dict[str, type[serializers.Serializer]] = {}
    _listed: QuerySet | None = None
    # A response about one tournament carries its fair-play notices in this header, so
    # every API response of a reproducible (or rotation) tournament says so.
    FAIR_PLAY_HEADER = "Tienlen-Fair-Play"
    _notices: list[str] | None = None

    def noted(self, tournament: Tournament) -> Tournament:
        self._notices = tournament.fair_play_notices
        return tournament

    def tournament(self, slug: str, queryset: QuerySet | None = None) -> Tournament:
        return self.noted(get_object_or_404(tournament_rows() if queryset is None else queryset, slug=slug))

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        if self._notices is None and "slug" in self.kwargs:
            # A view that read its tournament another way: one small query, so that no
            # response about a labelled tournament goes without its label.
            found = tournament_notices(slug=self.kwargs["slug"])
            self._notices = found.fair_play_notices if found is not None else []
        if self._notices:
            response[self.FAIR_PLAY_HEADER] = "; ".join(self._notices)
        return response

    def get_serializer_class(self):
        method = self.request.method if self.request is not None else "GET"
        if method in self.input_serializers:
            return self.input_serializers[method]
        if method in ("POST", "PUT", "PATCH"):
            return NoInput
        return self.serializer_class or NoInput

    def get_queryset(self):
        return self._listed if self._listed is not None else []

    def handle_exception(self, exc):
        if isinstance(exc, DjangoValidationError):
            detail = exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
            exc = exceptions.ValidationError(detail)
        elif isinstance(exc, PermissionError):
            exc = exceptions.PermissionDenied(str(exc) or None)
        return super().handle_exception(exc)

    def page(self, queryset, serializer_class, **context):
        self._listed = queryset
        page = self.paginate_queryset(queryset)
        data = serializer_class(page, many=True, context={"request": self.request, **context}).data
        return self.get_paginated_response(data)


def _input(serializer_class, request: Request, *, partial: bool = False) -> dict:
    serializer = serializer_class(data=request.data, partial=partial)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


class IsOrganiser(permissions.BasePermission):
    message = "Only organisers can do this."

    def has_permission(self, request, view) -> bool:
        return user_is_organiser(user=request.user)


def _own_tournament(request: Request, slug: str) -> Tournament:
    tournament = get_object_or_404(tournament_rows(), slug=slug)
    if not user_can_manage_tournament(user=request.user, tournament=tournament):
        raise exceptions.PermissionDenied("Only this tournament's organiser can do this.")
    return tournament


def _own_bot(request: Request, name: str) -> Bot:
    bot = get_object_or_404(bot_list(), name=name)
    if bot.owner_id != request.user.pk:
        raise exceptions.PermissionDenied("Only the bot's owner can do this.")
    return bot


# --- the root ---------------------------------------------------------------------------


class ApiRootView(ServiceAPIView):
    """The Tiến Lên tournament platform's JSON API, version 1.

    Everyone reads tournaments, standings, bots, ratings and replays; signed-in users
    (session or `Authorization: Token tla_...`) register bots; organisers create and run
    tournaments. The OpenAPI schema and Swagger UI are linked below.
    """

    @extend_schema(exclude=True)
    def get(self, request):
        def link(name: str, *args: object) -> str:
            return reverse(name, args=args, request=request)

        return Response(
            {
                "tournaments": link("api:tournaments"),
                "bots": link("api:bots"),
                "pools": link("api:pools"),
                "tokens": link("api:tokens"),
                "schema": link("api-schema"),
                "docs": link("api-docs"),
            }
        )


# --- API tokens ------------------------------------------------------------------------


class ApiTokenListView(ServiceAPIView):
    # HTTP basic authentication here only: a script gets its first token with the user's
    # password (`curl -u alice -X POST .../tokens/`) instead of a session cookie and a
    # hand-made CSRF header; failed passwords count towards the login lockout (django-axes).
    # The token scheme stays first, so a browser is never asked for a basic-auth password.
    authentication_classes = [
        ApiTokenAuthentication,
        PasswordAuthentication,
        authentication.SessionAuthentication,
    ]
    permission_classes = [permissions.IsAuthenticated]
    serializer_class = s.ApiTokenOutput
    input_serializers = {"POST": s.ApiTokenInput}

    @extend_schema(responses=s.ApiTokenOutput(many=True), summary="Your API tokens (prefixes only)")
    def get(self, request):
        return self.page(api_tokens(user=request.user), s.ApiTokenOutput)

    @extend_schema(
        request=s.ApiTokenInput,
        responses={201: s.ApiTokenCreatedOutput},
        summary="Create an API token (shown once)",
        description="Accepts HTTP basic authentication (username and password), so a script "
        "can get its first token without a browser session.",
    )
    def post(self, request):
        data = _input(s.ApiTokenInput, request)
        token, key = api_token_create(user=request.user, name=data["name"])
        token.token = key
        return Response(s.ApiTokenCreatedOutput(token).data, status=status.HTTP_201_CREATED)


class ApiTokenRevokeView(ServiceAPIView):
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(request=None, responses={204: None}, summary="Revoke one of your API tokens")
    def delete(self, request, token_id: int):
        token = get_object_or_404(api_tokens(user=request.user), pk=token_id)
        api_token_revoke(token=token)
        return Response(status=status.HTTP_204_NO_CONTENT)


# --- bots ------------------------------------------------------------------------------


class BotListView(ServiceAPIView):
    serializer_class = s.BotOutput
    input_serializers = {"POST": s.BotCreateInput}

    @extend_schema(
        parameters=[OpenApiParameter("mine", OpenApiTypes.BOOL, description="Only your bots.")],
        responses=s.BotOutput(many=True),
        summary="List bots",
    )
    def get(self, request):
        mine = request.query_params.get("mine") in ("1", "true", "yes")
        if mine and request.user.is_authenticated:
            return self.page(bot_list(owner=request.user), s.BotOwnerOutput)
        return self.page(bot_list(), s.BotOutput)

    @extend_schema(request=s.BotCreateInput, responses={201: s.BotCreatedOutput}, summary="Register a bot (its token is shown once)")
    def post(self, request):
        data = _input(s.BotCreateInput, request)
        bot, token = bot_create(owner=request.user, **data)
        bot.token = token
        return Response(s.BotCreatedOutput(bot).data, status=status.HTTP_201_CREATED)


class BotDetailView(ServiceAPIView):
    serializer_class = s.BotOutput
    input_serializers = {"PATCH": s.BotUpdateInput}

    @extend_schema(responses=s.BotOwnerOutput, summary="A bot (owners also see the token prefix)")
    def get(self, request, name: str):
        bot = get_object_or_404(bot_list(), name=name)
        out = s.BotOwnerOutput if sealing.bot_private_visible(user=request.user, bot=bot) else s.BotOutput
        return Response(out(bot).data)

    @extend_schema(request=s.BotUpdateInput, responses=s.BotOwnerOutput, summary="Edit your bot's description")
    def patch(self, request, name: str):
        bot = _own_bot(request, name)
        data = _input(s.BotUpdateInput, request)
        return Response(s.BotOwnerOutput(bot_update(bot=bot, **data)).data)


class BotRotateTokenView(ServiceAPIView):
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(request=None, responses=s.BotTokenOutput, summary="Rotate your bot's token (the old one stops working)")
    def post(self, request, name: str):
        bot = _own_bot(request, name)
        token = bot_token_rotate(bot=bot)
        return Response({"bot": bot.name, "token": token})


class BotRevokeView(ServiceAPIView):
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(request=None, responses=s.BotOwnerOutput, summary="Revoke your bot's token")
    def post(self, request, name: str):
        bot = _own_bot(request, name)
        bot_revoke(bot=bot)
        return Response(s.BotOwnerOutput(bot).data)


class BotRatingsView(ServiceAPIView):
    @extend_schema(responses=s.BotRatingOutput(many=True), summary="A bot's rating in every pool")
    def get(self, request, name: str):
        bot = get_object_or_404(bot_list(), name=name)
        return Response(s.BotRatingOutput(bot_page(bot=bot, recent=0).ratings, many=True).data)


class BotRatingHistoryView(ServiceAPIView):
    serializer_class = s.RatingChangeOutput

    @extend_schema(
        operation_id="v1_bots_rating_history",
        responses=s.RatingChangeOutput(many=True),
        summary="A bot's rating history in a pool, per game",
    )
    def get(self, request, name: str, pool: str):
        bot = get_object_or_404(bot_list(), name=name)
        return self.page(bot_rating_history(bot=bot, pool=_pool(pool)), s.RatingChangeOutput)


class BotGamesView(ServiceAPIView):
    serializer_class = s.GameOutput

    @extend_schema(responses=s.GameOutput(many=True), summary="A bot's games, newest first")
    def get(self, request, name: str):
        bot = get_object_or_404(bot_list(), name=name)
        return self.page(game_list(bot=bot), s.GameOutput)


class HeadToHeadView(ServiceAPIView):
    @extend_schema(responses=s.HeadToHeadOutput, summary="How two bots fared in the games they shared")
    def get(self, request, name: str, other: str):
        a = get_object_or_404(bot_list(), name=name)
        b = get_object_or_404(bot_list(), name=other)
        return Response(s.HeadToHeadOutput(head_to_head(bot_a=a, bot_b=b)).data)


# --- tournaments -----------------------------------------------------------------------


class _NoFormatOverride:
    """DRF's settings, except that `?format=` does not choose the renderer."""

    URL_FORMAT_OVERRIDE = None

    def __getattr__(self, name: str):
        return getattr(api_settings, name)


class FormatFilterNegotiation(DefaultContentNegotiation):
    """For lists whose documented `?format=` filters tournaments by format: DRF otherwise
    reads it as the renderer to use and answered 404 to `?format=knockout`. The renderer
    still follows the Accept header (JSON by default)."""

    settings = _NoFormatOverride()


class TournamentListView(ServiceAPIView):
    serializer_class = s.TournamentOutput
    input_serializers = {"POST": s.TournamentCreateInput}
    content_negotiation_class = FormatFilterNegotiation

    def get_permissions(self):
        if self.request.method == "POST":
            return [permissions.IsAuthenticated(), IsOrganiser()]
        return [permissions.AllowAny()]

    @extend_schema(
        parameters=[
            OpenApiParameter("status", OpenApiTypes.STR, enum=Tournament.Status.values),
            OpenApiParameter("format", OpenApiTypes.STR, enum=Tournament.Format.values),
        ],
        responses=s.TournamentOutput(many=True),
        summary="List tournaments",
    )
    def get(self, request):
        filters = {}
        for name, choices in (("status", Tournament.Status.values), ("format", Tournament.Format.values)):
            value = request.query_params.get(name)
            if value and value not in choices:
                raise exceptions.ValidationError({name: [f"Unknown {name}; choose from {', '.join(choices)}."]})
            filters[name] = value
        qs = tournament_list(**filters)
        return self.page(qs, s.TournamentOutput)

    @extend_schema(request=s.TournamentCreateInput, responses={201: s.TournamentOutput}, summary="Create a tournament (organisers)")
    def post(self, request):
        data = dict(_input(s.TournamentCreateInput, request))
        if "slug" in data and tournament_slug_taken(slug=data["slug"]):
            raise exceptions.ValidationError({"slug": "A tournament with this slug exists."})
        tournament = tournament_create(organiser=request.user, **data)
        return Response(s.TournamentOutput(tournament).data, status=status.HTTP_201_CREATED)


class TournamentDetailView(ServiceAPIView):
    input_serializers = {"PATCH": s.TournamentCreateInput}

    def get_permissions(self):
        if self.request.method == "PATCH":
            return [permissions.IsAuthenticated(), IsOrganiser()]
        return [permissions.AllowAny()]

    @extend_schema(responses=s.TournamentOutput, summary="A tournament")
    def get(self, request, slug: str):
        tournament = self.tournament(slug, tournament_list())
        return Response(s.TournamentOutput(tournament).data)

    @extend_schema(
        request=s.TournamentCreateInput, responses=s.TournamentOutput,
        summary="Edit a draft (its organiser): any setting the create call takes, checked as at creation",
        description="Only the fields sent change. Setting games_per_table replaces duplicate_sets and "
        "the other way round. A tournament that is no longer a draft answers 400; entrants are "
        "added and removed at .../entrants/.",
    )
    def patch(self, request, slug: str):
        tournament = self.noted(_own_tournament(request, slug))
        fixed = sorted(set(request.data) - set(s.TournamentCreateInput().fields))
        if fixed:
            # DRF would ignore them: say so, so that nobody believes they changed.
            raise exceptions.ValidationError(
                {name: "Not a setting of a draft (the create call's fields only)." for name in fixed}
            )
        data = _input(s.TournamentCreateInput, request, partial=True)
        tournament = tournament_update(tournament=tournament, **data)
        return Response(s.TournamentOutput(self.tournament(tournament.slug, tournament_list())).data)


class TournamentProgressView(ServiceAPIView):
    @extend_schema(responses=s.ProgressOutput, summary="Tables done / total and games done, now")
    def get(self, request, slug: str):
        tournament = self.tournament(slug)
        return Response(tournament_progress(tournament=tournament).as_dict())


class TournamentEntrantsView(ServiceAPIView):
    serializer_class = s.EntrantOutput
    input_serializers = {"POST": s.EntrantInput}
    def get_permissions(self):
        if self.request.method == "POST":
            return [permissions.IsAuthenticated(), IsOrganiser()]
        return [permissions.AllowAny()]

    @extend_schema(responses=s.EntrantOutput(many=True), summary="Entrants")
    def get(self, request, slug: str):
        tournament = self.tournament(slug)
        return Response(s.EntrantOutput(tournament.entrants.select_related("bot"), many=True).data)

    @extend_schema(
        request=s.EntrantInput, responses={201: s.EntrantOutput},
        summary="Add an entrant (the tournament's organiser): your own bots and house bots at once, "
        "another user's bot as an invitation (status invited) that its owner accepts",
    )
    def post(self, request, slug: str):
        tournament = self.noted(_own_tournament(request, slug))
        data = _input(s.EntrantInput, request)
        bot = bot_find(name=data["bot"])
        if bot is None:
            raise exceptions.ValidationError({"bot": f"No bot named {data['bot']!r}."})
        entrant = tournament_entrant_enter(tournament=tournament, bot=bot, by=request.user)
        return Response(s.EntrantOutput(entrant).data, status=status.HTTP_201_CREATED)


class TournamentEntrantDeleteView(ServiceAPIView):
    permission_classes = [permissions.IsAuthenticated, IsOrganiser]

    @extend_schema(request=None, responses={204: None}, summary="Remove an entrant before the start")
    def delete(self, request, slug: str, bot: str):
        tournament = self.noted(_own_tournament(request, slug))
        tournament_entrant_remove(tournament=tournament, bot=get_object_or_404(bot_list(), name=bot))
        return Response(status=status.HTTP_204_NO_CONTENT)


class EntrantNotesPublishView(ServiceAPIView):
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(request=None, responses={200: OpenApiTypes.OBJECT},
                   summary="Publish your bot's move notes of a finished tournament (bot owners; "
                   "every replay of its games there then shows them)")
    def post(self, request, slug: str, bot: str):
        tournament = self.tournament(slug)
        entrant = entrant_notes_publish(user=request.user, tournament=tournament,
                                        bot=get_object_or_404(bot_list(), name=bot))
        return Response({"tournament": tournament.slug, "bot": bot,
                         "notes_published_at": entrant.notes_published_at.isoformat()})


class LadderJoinView(ServiceAPIView):
    input_serializers = {"POST": s.EntrantInput}
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(request=s.EntrantInput, responses={201: s.EntrantOutput},
                   summary="Enter your bot in an open ladder or tournament, within its registration window "
                   "(bot owners; joining with an invited bot accepts the invitation)")
    def post(self, request, slug: str):
        tournament = self.tournament(slug)
        data = _input(s.EntrantInput, request)
        bot = bot_find(name=data["bot"])
        if bot is None:
            raise exceptions.ValidationError({"bot": f"No bot named {data['bot']!r}."})
        entrant = entry_join(tournament=tournament, bot=bot, user=request.user)
        return Response(s.EntrantOutput(entrant).data, status=status.HTTP_201_CREATED)


class LadderLeaveView(ServiceAPIView):
    input_serializers = {"POST": s.EntrantInput}
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(request=s.EntrantInput, responses={204: None},
                   summary="Withdraw your bot (bot owners; docs/organiser-guide.md says what happens "
                   "to a running tournament's games)")
    def post(self, request, slug: str):
        tournament = self.tournament(slug)
        data = _input(s.EntrantInput, request)
        bot = get_object_or_404(bot_list(), name=data["bot"])
        entry_withdraw(tournament=tournament, bot=bot, user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class InvitationListView(ServiceAPIView):
    serializer_class = s.InvitationOutput
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(responses=s.InvitationOutput(many=True),
                   summary="Invitations waiting for your answer: your bots entered by other organisers")
    def get(self, request):
        return Response(s.InvitationOutput(bot_invitations(owner=request.user), many=True).data)


class InvitationAnswerView(ServiceAPIView):
    permission_classes = [permissions.IsAuthenticated]
    accept = True

    @extend_schema(request=None, responses={200: s.EntrantOutput, 204: None},
                   summary="Accept (accept/) or decline (decline/) the invitation of your bot")
    def post(self, request, slug: str, bot: str):
        tournament = self.tournament(slug)
        entrant = invitation_respond(tournament=tournament, bot=get_object_or_404(bot_list(), name=bot),
                                     user=request.user, accept=self.accept)
        if entrant is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(s.EntrantOutput(entrant).data)


class InvitationDeclineView(InvitationAnswerView):
    accept = False


class EntrantDisqualifyView(ServiceAPIView):
    input_serializers = {"POST": s.ReasonInput}
    permission_classes = [permissions.IsAuthenticated, IsOrganiser]

    @extend_schema(request=s.ReasonInput, responses=s.EntrantOutput,
                   summary="Disqualify an entrant, with a reason shown on the tournament page (its organiser)")
    def post(self, request, slug: str, bot: str):
        tournament = self.noted(_own_tournament(request, slug))
        data = _input(s.ReasonInput, request)
        entrant = entrant_disqualify(tournament=tournament, bot=get_object_or_404(bot_list(), name=bot),
                                     user=request.user, reason=data["reason"])
        return Response(s.EntrantOutput(entrant).data)


class TournamentStartView(ServiceAPIView):
    input_serializers = {"POST": s.StartInput}
    permission_classes = [permissions.IsAuthenticated, IsOrganiser]

    @extend_schema(request=s.StartInput, responses=s.TournamentOutput, summary="Start now or at starts_at")
    def post(self, request, slug: str):
        tournament = self.noted(_own_tournament(request, slug))
        data = _input(s.StartInput, request)  # starts_at left out: the draft's own
        return Response(s.TournamentOutput(tournament_start(tournament=tournament, **data)).data)


class TournamentCancelView(ServiceAPIView):
    input_serializers = {"POST": s.CancelInput}
    permission_classes = [permissions.IsAuthenticated, IsOrganiser]

    @extend_schema(request=s.CancelInput, responses=s.TournamentOutput, summary="Cancel (recorded games stay)")
    def post(self, request, slug: str):
        tournament = self.noted(_own_tournament(request, slug))
        data = _input(s.CancelInput, request)
        return Response(s.TournamentOutput(tournament_cancel(tournament=tournament, **data)).data)


class TournamentStandingsView(ServiceAPIView):
    @extend_schema(responses=s.StandingOutput(many=True), summary="Standings with 95% intervals and Plackett-Luce strength")
    def get(self, request, slug: str):
        tournament = self.tournament(slug)
        return Response(s.StandingOutput(tournament_standings(tournament=tournament), many=True).data)


class TournamentLuckAdjustedView(ServiceAPIView):
    @extend_schema(
        responses=s.LuckAdjustedOutput,
        summary="Raw and luck-adjusted points per game with 95% intervals (revealed deals only)",
    )
    def get(self, request, slug: str):
        tournament = self.tournament(slug)
        return Response(s.LuckAdjustedOutput(tournament_luck_adjusted(tournament=tournament)).data)


class TournamentCrossTableView(ServiceAPIView):
    @extend_schema(
        responses=inline_serializer(
            "CrossTable",
            {"entrants": serializers.ListField(child=serializers.DictField()), "cells": serializers.DictField()},
        ),
        summary="Pairwise results between entrants",
    )
    def get(self, request, slug: str):
        tournament = self.tournament(slug)
        table = tournament_cross_table(tournament=tournament)
        cells = {str(a): {str(b): cell for b, cell in row.items()} for a, row in table.cells.items()}
        return Response({"entrants": table.entrants, "cells": cells})


class TournamentBracketView(ServiceAPIView):
    @extend_schema(
        responses=inline_serializer(
            "Bracket",
            {
                "rounds": serializers.ListField(
                    child=serializers.DictField(),
                    help_text="Each round: its tables with seats, `table_sizes` (seats at each "
                    "table) and `final`. In the final only the winner has `advanced: true`.",
                ),
                "winner": serializers.CharField(allow_null=True, help_text="A finished knockout's winner."),
            },
        ),
        summary="Rounds, tables, who advanced and who won",
    )
    def get(self, request, slug: str):
        try:
            tournament = self.noted(tournament_get(slug=slug))
        except Tournament.DoesNotExist as exc:
            raise exceptions.NotFound("No such tournament.") from exc
        return Response({"rounds": tournament_bracket(tournament=tournament), "winner": tournament.winner})


class TournamentTablesView(ServiceAPIView):
    serializer_class = s.TableOutput

    @extend_schema(responses=s.TableOutput(many=True), summary="Tables of a tournament")
    def get(self, request, slug: str):
        tournament = self.tournament(slug)
        return self.page(table_list(tournament=tournament), s.TableOutput)


class TournamentGamesView(ServiceAPIView):
    serializer_class = s.GameOutput

    @extend_schema(responses=s.GameOutput(many=True), summary="Games of a tournament, newest first")
    def get(self, request, slug: str):
        tournament = self.tournament(slug)
        return self.page(game_list(tournament=tournament), s.GameOutput)


# --- pools, games ----------------------------------------------------------------------


def _pool(slug: str) -> RatingPool:
    try:
        return pool_by_name(name=slug)
    except PoolNameInvalid as exc:
        raise exceptions.NotFound(str(exc)) from None
    except RatingPool.DoesNotExist as exc:
        raise exceptions.NotFound("No such rating pool.") from exc


class PoolListView(ServiceAPIView):
    serializer_class = s.PoolOutput

    @extend_schema(responses=s.PoolOutput(many=True), summary="Rating pools (preset x seats)")
    def get(self, request):
        return self.page(pool_list(), s.PoolOutput)


class PoolLeaderboardView(ServiceAPIView):
    serializer_class = s.RatingOutput

    @extend_schema(
        parameters=[OpenApiParameter("min_games", OpenApiTypes.INT)],
        responses=s.RatingOutput(many=True),
        summary="Leaderboard of a pool, best first",
    )
    def get(self, request, pool: str):
        raw = request.query_params.get("min_games", "0")
        if not re.fullmatch(r"[0-9]{1,9}", raw):
            raise exceptions.ValidationError({"min_games": ["Must be a whole number from 0 to 999999999."]})
        min_games = int(raw)
        qs: QuerySet = pool_leaderboard(pool=_pool(pool), min_games=min_games)
        return self.page(qs, s.RatingOutput)


class DealWithheldError(exceptions.APIException):
    status_code = status.HTTP_403_FORBIDDEN
    default_code = "deal_withheld"


def _withheld(exc: sealing.DealWithheld) -> DealWithheldError:
    """403 with the reason: the game exists, its deal is still being played elsewhere.
    Nothing of the game's result is in the message."""
    game = exc.game
    deals = reverse("api:deals", args=[game.table.tournament.slug])
    return DealWithheldError(
        f"The {exc.what} of game {game.pk} is {sealing.DEAL_WITHHELD}; the commitment to its "
        f"deal (group {game.deal.group}, deal {game.deal.index}) is public at {deals}?group={game.deal.group}."
    )


class ReplayUnreadable(exceptions.APIException):
    """410: the game exists but its stored replay is damaged (never a 500); the detail is
    the engine reader's message."""

    status_code = status.HTTP_410_GONE
    default_code = "replay_unreadable"


def _game_notices(view: ServiceAPIView, game_id: int) -> None:
    tournament = tournament_notices(game_id=game_id)
    if tournament is not None:
        view.noted(tournament)


_WITHHELD_RESPONSE = OpenApiResponse(
    description=f"The game's deal is {sealing.DEAL_WITHHELD} (code deal_withheld): its result, "
    "replay and proof are sealed until then."
)
_UNREADABLE_RESPONSE = OpenApiResponse(
    description="The game's stored replay is damaged (code replay_unreadable); the detail says "
    "what the engine's replay reader found."
)


class GameDetailView(ServiceAPIView):
    @extend_schema(
        responses={200: s.GameOutput, 403: _WITHHELD_RESPONSE},
        summary="A game, once its deal is revealed (its result is sealed until then)",
    )
    def get(self, request, game_id: int):
        try:
            game = game_get(game_id=game_id)
        except Game.DoesNotExist as exc:
            raise exceptions.NotFound("No such game.") from exc
        except sealing.DealWithheld as exc:
            self.noted(exc.game.table.tournament)
            raise _withheld(exc) from None
        self.noted(game.table.tournament)
        return Response(s.GameOutput(game, context={"request": request}).data)


class GameReplayView(ServiceAPIView):
    @extend_schema(
        responses={200: OpenApiTypes.OBJECT, 403: _WITHHELD_RESPONSE, 410: _UNREADABLE_RESPONSE},
        summary="The engine's replay JSON (tienlen.replay/1), once the game's deal is revealed; "
        "moves carry a `note` only for the seats of the bots the caller owns",
    )
    def get(self, request, game_id: int):
        _game_notices(self, game_id)
        try:
            return Response(game_replay(game_id=game_id, user=request.user))
        except Replay.DoesNotExist as exc:
            raise exceptions.NotFound("No such game.") from exc
        except sealing.DealWithheld as exc:
            raise _withheld(exc) from None
        except ReplayError as exc:
            raise ReplayUnreadable(f"{exc}.") from None


class GameProofView(ServiceAPIView):
    @extend_schema(
        responses={200: OpenApiTypes.OBJECT, 403: _WITHHELD_RESPONSE, 410: _UNREADABLE_RESPONSE},
        summary="Everything to verify a game's deal and result (tienlen.deal-proof/1): "
        "`tienlen-bot verify-replay <this URL>`",
    )
    def get(self, request, game_id: int):
        _game_notices(self, game_id)
        try:
            return Response(game_proof(game_id=game_id))
        except (Game.DoesNotExist, Replay.DoesNotExist) as exc:
            raise exceptions.NotFound("No such game.") from exc
        except sealing.DealWithheld as exc:
            raise _withheld(exc) from None
        except ReplayError as exc:
            raise ReplayUnreadable(f"{exc}.") from None


class TournamentDealsView(ServiceAPIView):
    serializer_class = s.DealOutput

    @extend_schema(
        parameters=[
            OpenApiParameter("group", OpenApiTypes.INT, description="One deal group (a table's deal_group)."),
            OpenApiParameter("revealed", OpenApiTypes.BOOL, description="Only revealed (true) or sealed (false) deals."),
        ],
        responses=s.DealOutput(many=True),
        summary="Deal commitments, published before play; seeds once each deal is played everywhere",
    )
    def get(self, request, slug: str):
        tournament = self.tournament(slug)
        params = request.query_params
        group = revealed = None
        if params.get("group", "") != "":
            try:
                group = int(params["group"])
            except ValueError as exc:
                raise exceptions.ValidationError({"group": "Must be an integer (a table's deal_group)."}) from exc
        if params.get("revealed", "") != "":
            if params["revealed"] not in ("true", "false", "1", "0"):
                raise exceptions.ValidationError({"revealed": "Must be true or false."})
            revealed = params["revealed"] in ("true", "1")
        return self.page(deal_list(tournament=tournament, group=group, revealed=revealed), s.DealOutput)
