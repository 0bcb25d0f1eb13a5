"""The collusion report in the API: the tournament's organiser and staff only
(tournaments/selectors/collusion.py; docs/fair-play.md, "Collusion at one table")."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import exceptions, permissions, serializers
from rest_framework.response import Response

from tournaments.api.views import ServiceAPIView, _own_tournament
from tournaments.scoring.collusion import DEFAULT_ALPHA
from tournaments.selectors.collusion import tournament_collusion


class CollusionPairOutput(serializers.Serializer):
    bot_a = serializers.CharField()
    bot_b = serializers.CharField()
    house_a = serializers.BooleanField()
    house_b = serializers.BooleanField()
    games = serializers.IntegerField(help_text="Games the two played at one table of 3 or 4 seats (revealed deals).")
    gain_a = serializers.FloatField(help_text="bot_a's luck-adjusted points a game at those tables minus its expectation there.")
    gain_b = serializers.FloatField()
    joint_gain = serializers.FloatField(help_text="gain_a + gain_b: what the pair gained together, points a game.")
    se = serializers.FloatField(allow_null=True, help_text="Standard error of joint_gain (null: not estimable).")
    z = serializers.FloatField(allow_null=True)
    p_value = serializers.FloatField(allow_null=True, help_text="One-sided: the chance of so large a joint gain with honest play.")
    p_adjusted = serializers.FloatField(allow_null=True, help_text="Holm-adjusted over the pairs tested; null when not tested.")
    tested = serializers.BooleanField(help_text="Both remote bots with enough shared games (house bots cannot collude).")
    flagged = serializers.BooleanField(help_text="p_adjusted <= alpha: a reason to read their games, not a proof.")
    note = serializers.CharField(help_text="Why the pair is not tested.")


class CollusionOutput(serializers.Serializer):
    pairs = CollusionPairOutput(many=True)
    tested = serializers.IntegerField()
    flagged = serializers.IntegerField()
    alpha = serializers.FloatField()
    correction = serializers.CharField()
    games_scored = serializers.IntegerField(help_text="Games counted: those whose deal is revealed.")
    games_withheld = serializers.IntegerField(help_text="Games on deals not yet revealed (counted once they are).")
    residual_sd = serializers.FloatField(allow_null=True)
    method = serializers.CharField()


class TournamentCollusionView(ServiceAPIView):
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(
        parameters=[OpenApiParameter("alpha", OpenApiTypes.FLOAT, description=f"family-wise error rate (default {DEFAULT_ALPHA})")],
        responses=CollusionOutput,
        summary="Collusion report: pairs that gained together at shared tables (the tournament's organiser and staff)",
    )
    def get(self, request, slug: str):
        tournament = self.noted(_own_tournament(request, slug))
        raw = request.query_params.get("alpha")
        alpha = DEFAULT_ALPHA
        if raw is not None:
            try:
                alpha = float(raw)
            except ValueError:
                alpha = -1.0
            if not 0 < alpha < 1:
                raise exceptions.ValidationError({"alpha": ["A number between 0 and 1 (exclusive), e.g. 0.01."]})
        report = tournament_collusion(tournament=tournament, alpha=alpha)
        response = Response(CollusionOutput(report).data)
        response["Cache-Control"] = "private, no-store"
        return response
