from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from deskmcp.core import dates
from deskmcp.core.dates import iso, parse_timestamp, parse_user_time, resolve_zone, zone_label
from deskmcp.core.errors import BadRequest


@pytest.mark.parametrize(
    "value",
    ["2024-01-15T10:00:00Z", "2024-01-15T11:00:00+01:00", 1705312800, 1705312800000, "1705312800", 1705312800.0],
)
def test_timestamps_in_every_source_form_normalise_to_the_same_utc_instant(value: object):
    assert parse_timestamp(value) == datetime(2024, 1, 15, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize("value", [None, "", "yesterday", True, {"a": 1}, 10**30])
def test_unreadable_timestamps_are_none(value: object):
    assert parse_timestamp(value) is None


def test_a_bare_date_is_a_whole_day_in_the_users_zone():
    paris = ZoneInfo("Europe/Paris")
    assert iso(parse_user_time("2024-07-01", "from_ts", paris)) == "2024-06-30T22:00:00Z"
    assert iso(parse_user_time("2024-07-01", "to_ts", paris, end_of_day=True)) == "2024-07-01T22:00:00Z"


def test_a_bad_user_date_is_a_bad_request_naming_the_field():
    with pytest.raises(BadRequest) as info:
        parse_user_time("31/12/2024", "from_ts", UTC)
    assert info.value.details["field"] == "from_ts"


def test_unknown_zone_name_is_a_bad_request():
    with pytest.raises(BadRequest):
        resolve_zone("Mars/Olympus")
    assert str(resolve_zone("Asia/Tokyo")) == "Asia/Tokyo"


def test_system_zone_without_posix_files_comes_from_tzlocal_and_keeps_daylight_saving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A Windows machine has neither file; tzlocal reads the zone from its registry.
    import tzlocal

    monkeypatch.delenv("TZ", raising=False)
    monkeypatch.setattr(dates, "LOCALTIME", tmp_path / "no-localtime")
    monkeypatch.setattr(dates, "TIMEZONE_FILE", tmp_path / "no-timezone")
    monkeypatch.setattr(tzlocal, "get_localzone_name", lambda: "America/New_York")
    zone = resolve_zone(None)
    assert zone_label(zone) == "America/New_York"
    winter = datetime(2026, 1, 15, 12, tzinfo=zone).utcoffset()
    summer = datetime(2026, 7, 15, 12, tzinfo=zone).utcoffset()
    assert (winter, summer) == (timedelta(hours=-5), timedelta(hours=-4))


def test_system_zone_prefers_tz_over_tzlocal(monkeypatch: pytest.MonkeyPatch) -> None:
    import tzlocal

    monkeypatch.setenv("TZ", ":Asia/Tokyo")
    monkeypatch.setattr(tzlocal, "get_localzone_name", lambda: "America/New_York")
    assert zone_label(resolve_zone(None)) == "Asia/Tokyo"


def test_utc_stamp_writes_every_instant_in_one_form_with_z() -> None:
    paris = datetime(2026, 7, 1, 11, 30, 15, 999_999, tzinfo=ZoneInfo("Europe/Paris"))
    assert dates.utc_stamp(paris) == "2026-07-01T09:30:15Z"
    assert dates.utc_stamp().endswith("Z")
