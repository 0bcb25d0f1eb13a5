"""Admin: browse everything; token hashes are read-only (tokens are rotated via the API)."""

from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.contrib.auth.models import User

from tournaments import models
from tournaments.sealing import deal_seed


class EntrantInline(admin.TabularInline):
    model = models.Entrant
    extra = 0
    raw_id_fields = ["bot"]


class TableSeatInline(admin.TabularInline):
    model = models.TableSeat
    extra = 0
    raw_id_fields = ["entrant"]


class GameSeatInline(admin.TabularInline):
    model = models.GameSeat
    extra = 0
    raw_id_fields = ["bot", "entrant", "version"]


@admin.register(models.Bot)
class BotAdmin(admin.ModelAdmin):
    list_display = ["name", "owner", "house_bot", "token_prefix", "revoked_at", "created_at"]
    search_fields = ["name", "owner__username"]
    readonly_fields = ["token_hash", "token_prefix", "token_created_at"]


@admin.register(models.BotVersion)
class BotVersionAdmin(admin.ModelAdmin):
    list_display = ["bot", "version", "first_seen_at"]
    search_fields = ["bot__name", "version"]


@admin.register(models.ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["user", "name", "prefix", "created_at", "last_used_at", "revoked_at"]
    readonly_fields = ["key_hash", "prefix"]


@admin.register(models.RatingPool)
class RatingPoolAdmin(admin.ModelAdmin):
    list_display = ["preset", "seats", "k_factor", "games_rated"]
    readonly_fields = ["games_rated"]


@admin.register(models.Rating)
class RatingAdmin(admin.ModelAdmin):
    list_display = ["bot", "pool", "rating", "games", "updated_at"]
    list_filter = ["pool"]
    readonly_fields = ["rating", "games"]


@admin.register(models.Tournament)
class TournamentAdmin(admin.ModelAdmin):
    list_display = ["name", "format", "status", "preset", "seats_per_table", "created_at"]
    list_filter = ["format", "status", "preset"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [EntrantInline]


@admin.register(models.Table)
class TableAdmin(admin.ModelAdmin):
    list_display = ["tournament", "round", "number", "status", "games_recorded", "attempts", "referee"]
    list_filter = ["status"]
    inlines = [TableSeatInline]


@admin.register(models.Deal)
class DealAdmin(admin.ModelAdmin):
    """Read-only, and the seed only once revealed: staff see what the public will see, so
    an organiser with admin access cannot peek at a deal before it is played."""

    list_display = ["tournament", "group", "index", "commitment", "revealed_at"]
    list_filter = ["revealed_at"]
    fields = ["tournament", "group", "index", "commitment", "created_at", "revealed_at", "revealed_seed"]
    readonly_fields = fields

    @admin.display(description="seed")
    def revealed_seed(self, obj: models.Deal) -> str:
        return deal_seed(obj) or "(secret until the deal has been played at every table)"

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(models.Game)
class GameAdmin(admin.ModelAdmin):
    list_display = ["table", "index", "players", "recorded_at", "rating_seq"]
    inlines = [GameSeatInline]


@admin.register(models.RatingChange)
class RatingChangeAdmin(admin.ModelAdmin):
    list_display = ["pool", "seq", "bot", "rating_before", "rating_after"]
    list_filter = ["pool"]


# --- verified entry: staff approve accounts (tournaments.services.verification) ----------


@admin.action(description="Approve the selected accounts for verified entry")
def approve_for_verified_entry(modeladmin, request, queryset) -> None:
    from tournaments.services.verification import account_approve

    for user in queryset:
        account_approve(user=user, by=request.user)
    modeladmin.message_user(request, f"{queryset.count()} account(s) approved for verified entry.")


@admin.action(description="Withdraw the selected accounts' verification (approval and e-mail confirmation)")
def revoke_verified_entry(modeladmin, request, queryset) -> None:
    from tournaments.services.verification import account_approval_revoke

    for user in queryset:
        account_approval_revoke(user=user, by=request.user)
    modeladmin.message_user(request, f"{queryset.count()} account(s) no longer verified.")


class VerificationInline(admin.StackedInline):
    model = models.AccountVerification
    fk_name = "user"
    can_delete = False
    fields = ["approved_at", "approved_by", "email_confirmed", "email_confirmed_at"]
    readonly_fields = fields


class UserAdmin(DjangoUserAdmin):
    actions = [approve_for_verified_entry, revoke_verified_entry]
    inlines = [*DjangoUserAdmin.inlines, VerificationInline]
    list_display = [*DjangoUserAdmin.list_display, "verified"]
    list_select_related = ["verification"]  # the column below reads it: no query per row

    @admin.display(description="verified entry")
    def verified(self, obj) -> str:
        from tournaments.services.verification import user_verification_loaded

        return user_verification_loaded(obj) or "–"


admin.site.unregister(User)
admin.site.register(User, UserAdmin)
