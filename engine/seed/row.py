"""The base of every seed row: frozen, no extra fields, no NaN or infinity, text cells bounded, a source."""

from pydantic import BaseModel, ConfigDict, Field

#: the longest text cell (names, source, note): curated seed cells reach ~430 characters
MAX_TEXT_CHARS = 2_000


class _Row(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True, allow_inf_nan=False,
                              str_max_length=MAX_TEXT_CHARS)

    source: str = Field(min_length=3, description="short reference: URL or paper and section")
