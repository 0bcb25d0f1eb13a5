"""The API of hosted bots: submit a version, read the versions and the sessions' logs,
switch a bot between remote and hosted. Everything here is the bot's private data: its
owner's only (tournaments.selectors.versions asks tournaments.sealing); anyone else gets
404, as if there were nothing, and a write by anyone else 403."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import exceptions, parsers, permissions, serializers, status
from rest_framework.response import Response

from tournaments.api.views import ServiceAPIView
from tournaments.models import Bot, BotSubmission, HostedSession
from tournaments.sealing import version_gate
from tournaments.selectors import versions as selectors_versions
from tournaments.services.hosting import (
    bot_gate_set,
    bot_hosting_set,
    bot_storage_clear,
    submission_create,
    submission_promote,
)


class ZipParser(parsers.BaseParser):
    """A raw zip body (`Content-Type: application/zip`), as `tienlen-bot submit` sends it."""

    media_type = "application/zip"

    def parse(self, stream, media_type=None, parser_context=None):
        return {"archive_bytes": stream.read() if stream is not None else b""}


class VersionOutput(serializers.ModelSerializer):
    version = serializers.CharField(read_only=True)
    uploaded_by = serializers.CharField(source="uploaded_by.username", default=None)
    active = serializers.SerializerMethodField()

    class Meta:
        model = BotSubmission
        fields = ["seq", "version", "status", "detail", "runtime", "entry", "sdk_version", "sha256", "size",
                  "unpacked_size", "files", "uploaded_by", "uploaded_at", "validated_at", "active",
                  "promoted_at", "gate", "validation_log"]

    gate = serializers.SerializerMethodField()

    def get_gate(self, obj: BotSubmission) -> dict | None:
        """Its gate against its predecessor (docs/hosting.md), None when it had none; through
        tournaments.sealing (the owner's data)."""
        request = self.context.get("request")
        return version_gate(user=request.user if request else None, bot=obj.bot, submission=obj)

    def get_active(self, obj: BotSubmission) -> bool:
        return obj.bot.active_submission_id == obj.pk


class SessionOutput(serializers.ModelSerializer):
    version = serializers.CharField(source="submission.version")
    tournament = serializers.CharField(source="table.tournament.slug", default=None)

    class Meta:
        model = HostedSession
        fields = ["id", "version", "tournament", "table", "casual_table", "status", "runner", "starts", "reason", "fault",
                  "detail", "exit_code", "log_bytes", "log_truncated", "created_at", "started_at", "ended_at",
                  "log"]


class HostingInput(serializers.Serializer):
    hosting = serializers.ChoiceField(choices=[c for c, _ in Bot._meta.get_field("hosting").choices], required=False)
    gate = serializers.ChoiceField(choices=[c for c, _ in Bot._meta.get_field("gate").choices], required=False)

    def validate(self, attrs):
        if not attrs:
            raise serializers.ValidationError("Give hosting (remote or hosted), gate (off, manual or auto), or both.")
        return attrs


def _bot(name: str) -> Bot:
    return get_object_or_404(Bot.objects.select_related("active_submission").defer("active_submission__archive"), name=name)


def _owned(request, bot: Bot):
    rows = selectors_versions.bot_submissions(viewer=request.user, bot=bot)
    if rows is None:
        raise exceptions.NotFound("No such bot versions.")
    return rows


def _hosting_out(bot: Bot) -> dict:
    active = bot.active_submission
    return {"bot": bot.name, "hosting": bot.hosting, "active_version": active.version if active else None,
            "hosting_stopped": bot.hosting_stopped, "gate": bot.gate}


class BotVersionsView(ServiceAPIView):
    permission_classes = [permissions.IsAuthenticated]
    parser_classes = [ZipParser, parsers.MultiPartParser, parsers.FormParser]

    @extend_schema(responses=VersionOutput(many=True), summary="Your bot's submitted versions (owner only)")
    def get(self, request, name: str):
        bot = _bot(name)
        for row in (rows := list(_owned(request, bot))):
            row.bot = bot
        return Response(VersionOutput(rows, many=True, context={"request": request}).data)

    @extend_schema(
        request={"application/zip": OpenApiTypes.BINARY, "multipart/form-data": OpenApiTypes.OBJECT},
        parameters=[OpenApiParameter("runtime", str, description="python3.11 (default) or node20"),
                    OpenApiParameter("sdk_version", str, description="the SDK version the bot was written for")],
        responses={201: VersionOutput}, summary="Submit a new version of your bot's code (a zip)")
    def post(self, request, name: str):
        bot = _bot(name)
        data = request.data.get("archive_bytes")
        if data is None:
            upload = request.data.get("archive")
            if upload is None:
                raise exceptions.ValidationError({"archive": "Send the zip as the body (application/zip) "
                                                  "or as the form field 'archive'."})
            data = upload.read(2 * 1024 * 1024)
        runtime = request.query_params.get("runtime") or request.data.get("runtime") or "python3.11"
        sdk = request.query_params.get("sdk_version") or request.data.get("sdk_version") or ""
        submission = submission_create(bot=bot, user=request.user, data=data, runtime=str(runtime),
                                       sdk_version=str(sdk))
        return Response(VersionOutput(submission, context={"request": request}).data,
                        status=status.HTTP_201_CREATED)


class BotVersionDetailView(ServiceAPIView):
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(responses=VersionOutput, summary="One version of your bot, with its validation log")
    def get(self, request, name: str, seq: int):
        bot = _bot(name)
        row = _owned(request, bot).filter(seq=seq).first()
        if row is None:
            raise exceptions.NotFound("No such version.")
        row.bot = bot
        return Response(VersionOutput(row, context={"request": request}).data)


class BotHostingView(ServiceAPIView):
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(responses=OpenApiTypes.OBJECT,
                   summary="Whether your bot is hosted, its active version, and why hosting stopped if it did")
    def get(self, request, name: str):
        bot = _bot(name)
        _owned(request, bot)
        return Response(_hosting_out(bot))

    @extend_schema(request=HostingInput, responses=OpenApiTypes.OBJECT,
                   summary="Switch your bot between remote (you run it) and hosted (the platform runs it)")
    def post(self, request, name: str):
        bot = _bot(name)
        data = HostingInput(data=request.data)
        data.is_valid(raise_exception=True)
        if "gate" in data.validated_data:
            bot = bot_gate_set(bot=bot, user=request.user, gate=data.validated_data["gate"])
        if "hosting" in data.validated_data:
            bot = bot_hosting_set(bot=bot, user=request.user, hosting=data.validated_data["hosting"])
        return Response(_hosting_out(bot))


class BotSessionsView(ServiceAPIView):
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(responses=SessionOutput(many=True),
                   summary="Your hosted bot's latest sessions: why each ended, and its log (owner only)")
    def get(self, request, name: str):
        bot = _bot(name)
        table, casual = request.query_params.get("table"), request.query_params.get("casual_table")
        rows = selectors_versions.bot_sessions(viewer=request.user, bot=bot,
                                               table_id=int(table) if table and table.isdigit() else None,
                                               casual_table_id=int(casual) if casual and casual.isdigit() else None)
        if rows is None:
            raise exceptions.NotFound("No such bot sessions.")
        return Response(SessionOutput(rows, many=True).data)


class BotVersionPromoteView(ServiceAPIView):
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(request=None, responses=VersionOutput,
                   summary="Make a ready version your bot's active one (after its gate, or without it)")
    def post(self, request, name: str, seq: int):
        bot = _bot(name)
        _owned(request, bot)  # anyone else: 404, as if there were no such bot versions
        submission = submission_promote(bot=bot, user=request.user, seq=seq)
        bot.refresh_from_db(fields=["active_submission"])
        submission.bot = bot
        return Response(VersionOutput(submission, context={"request": request}).data)


class BotStorageView(ServiceAPIView):
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(responses=OpenApiTypes.OBJECT,
                   summary="What your hosted bot keeps between its tables: its size (owner only)")
    def get(self, request, name: str):
        bot = _bot(name)
        row = selectors_versions.bot_storage(viewer=request.user, bot=bot)
        if row is None:
            raise exceptions.NotFound("No such bot storage.")
        return Response(row)

    @extend_schema(request=None, responses=OpenApiTypes.OBJECT,
                   summary="Empty your hosted bot's storage: its next session starts with none")
    def delete(self, request, name: str):
        bot = _bot(name)
        if selectors_versions.bot_storage(viewer=request.user, bot=bot) is None:
            raise exceptions.NotFound("No such bot storage.")
        cleared = bot_storage_clear(bot=bot, user=request.user)
        return Response({"bot": bot.name, "cleared": cleared, "size": 0, "files": 0})
