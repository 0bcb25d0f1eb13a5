"""The hosted tests start real runners, workers and referees, as the e2e tests do."""

from tests.e2e.stack import marker  # noqa: F401  (the one `marker` fixture)
