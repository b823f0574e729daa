"""Date and time functions (DATE, TODAY, EDATE, NETWORKDAYS...), with Excel's rules."""

from __future__ import annotations

import calendar
import datetime as dt
import math
from typing import Any

from deskmcp.sheets.formulas.functions.registry import (
    Context,
    Raised,
    cells,
    flag,
    integer,
    num,
    register,
    txt,
    value_of,
)
from deskmcp.sheets.formulas.values import (
    MISSING,
    NUM,
    VALUE,
    CellError,
    DateSerial,
    Uncomputable,
    serial,
    to_date,
)

# -- dates ----------------------------------------------------------------------------------------


_BEFORE_1900 = "a negative date: #NUM! in Excel, a day of 1899 in LibreOffice"


def day_of(arg: Any) -> dt.date:
    n = num(arg)
    if n < 0:
        raise Uncomputable(_BEFORE_1900)
    return to_date(n)


def _dated(day: dt.date) -> DateSerial:
    result = DateSerial(serial(day))
    if result < 61:
        raise Uncomputable("dates before 1 March 1900 are counted differently by Excel and LibreOffice")
    return result


def _add_months(day: dt.date, months: int) -> dt.date:
    total = day.year * 12 + day.month - 1 + months
    year, month = divmod(total, 12)
    if not 1900 <= year <= 9999:
        raise Raised(NUM)
    last = calendar.monthrange(year, month + 1)[1]
    return dt.date(year, month + 1, min(day.day, last))


@register("DATE")
def _date(year: Any, month: Any, day: Any) -> Any:
    y, m, d = integer(year), integer(month), integer(day)
    if y < 0:
        raise Uncomputable("DATE of a negative year: #NUM! in Excel, #VALUE! in LibreOffice")
    if 0 <= y < 1900:
        y += 1900
    if not 1900 <= y <= 9999:
        return NUM
    first = _add_months(dt.date(y, 1, 1), m - 1)
    try:
        return _dated(first + dt.timedelta(days=d - 1))
    except OverflowError:
        return NUM


@register("TODAY", context=True)
def _today(ctx: Context) -> Any:
    return _dated(ctx.now().date())


@register("NOW", context=True)
def _now(ctx: Context) -> Any:
    moment = ctx.now()
    seconds = moment.hour * 3600 + moment.minute * 60 + moment.second + moment.microsecond / 1e6
    return DateSerial(serial(moment.date()) + seconds / 86400)


@register("YEAR")
def _year(value: Any) -> Any:
    return float(day_of(value).year)


@register("MONTH")
def _month(value: Any) -> Any:
    return float(day_of(value).month)


@register("DAY")
def _day(value: Any) -> Any:
    return float(day_of(value).day)


def _seconds(value: Any) -> int:
    n = num(value)
    if n < 0:
        raise Uncomputable(_BEFORE_1900)
    return round((n - math.floor(n)) * 86400) % 86400


@register("HOUR")
def _hour(value: Any) -> Any:
    return float(_seconds(value) // 3600)


@register("MINUTE")
def _minute(value: Any) -> Any:
    return float(_seconds(value) // 60 % 60)


@register("SECOND")
def _second(value: Any) -> Any:
    return float(_seconds(value) % 60)


@register("TIME")
def _time(hours: Any, minutes: Any, seconds: Any) -> Any:
    parts = [num(hours), num(minutes), num(seconds)]
    if any(not p.is_integer() for p in parts):
        raise Uncomputable("TIME of a fraction: Excel drops it, LibreOffice keeps it")
    total = int(parts[0]) * 3600 + int(parts[1]) * 60 + int(parts[2])
    if total < 0:
        raise Uncomputable("TIME before midnight: #NUM! in Excel, #VALUE! in LibreOffice")
    return (total % 86400) / 86400


@register("DATEVALUE")
def _datevalue(value: Any) -> Any:
    v = value_of(value)
    if not isinstance(v, str):
        return VALUE
    return float(math.floor(num(v)))


@register("DAYS")
def _days(end: Any, start: Any) -> Any:
    a, b = num(end), num(start)
    if a < 0 or b < 0:
        raise Uncomputable(_BEFORE_1900)
    return float(math.floor(a) - math.floor(b))


@register("WEEKDAY")
def _weekday(value: Any, kind: Any = MISSING) -> Any:
    iso = day_of(value).isoweekday()  # Monday 1 .. Sunday 7
    k = integer(kind, 1)
    if k == 1:
        return float(iso % 7 + 1)
    if k == 2:
        return float(iso)
    if k == 3:
        return float(iso - 1)
    if 11 <= k <= 17:
        return float((iso - (k - 10)) % 7 + 1)
    raise Uncomputable("WEEKDAY of an unknown type: #NUM! in Excel, #VALUE! in LibreOffice")


@register("EDATE")
def _edate(start: Any, months: Any) -> Any:
    return _dated(_add_months(day_of(start), integer(months)))


@register("EOMONTH")
def _eomonth(start: Any, months: Any) -> Any:
    day = _add_months(day_of(start).replace(day=1), integer(months))
    return _dated(day.replace(day=calendar.monthrange(day.year, day.month)[1]))


@register("DATEDIF")
def _datedif(start: Any, end: Any, unit: Any) -> Any:
    a, b, u = day_of(start), day_of(end), txt(unit).upper()
    if a > b:
        return NUM
    months = (b.year - a.year) * 12 + b.month - a.month - (1 if b.day < a.day else 0)
    if u == "D":
        return float((b - a).days)
    if u == "M":
        return float(months)
    if u == "Y":
        return float(months // 12)
    if u == "YM":
        return float(months % 12)
    if u == "MD":
        # Days past the last whole month; Excel and LibreOffice differ when that month is shorter.
        anchor = _add_months(a, months)
        if anchor.day != a.day:
            raise Uncomputable("DATEDIF 'MD' from a day the month does not have")
        return float((b - anchor).days)
    if u == "YD":
        anchor = _add_months(a, months // 12 * 12)
        if anchor.day != a.day:
            raise Uncomputable("DATEDIF 'YD' from 29 February")
        return float((b - anchor).days)
    raise Uncomputable("DATEDIF with an unknown unit: #NUM! in Excel, #VALUE! in LibreOffice")


def _holidays(arg: Any) -> set[dt.date]:
    if arg is MISSING:
        return set()
    out: set[dt.date] = set()
    for v, _in_area in cells((arg,)):
        if v is None:
            continue
        if isinstance(v, CellError):
            raise Raised(v)
        if isinstance(v, str):
            raise Uncomputable("a holiday given as text: LibreOffice skips it")
        out.add(day_of(v))
    return out


@register("NETWORKDAYS")
def _networkdays(start: Any, end: Any, holidays: Any = MISSING) -> Any:
    a, b, off = day_of(start), day_of(end), _holidays(holidays)
    sign = 1
    if a > b:
        a, b, sign = b, a, -1
    count = 0
    day = a
    while day <= b:
        if day.weekday() < 5 and day not in off:
            count += 1
        day += dt.timedelta(days=1)
    return float(sign * count)


@register("WORKDAY")
def _workday(start: Any, days: Any, holidays: Any = MISSING) -> Any:
    day, n, off = day_of(start), integer(days), _holidays(holidays)
    step = 1 if n >= 0 else -1
    remaining = abs(n)
    if remaining > 100_000:
        return NUM
    while remaining:
        day += dt.timedelta(days=step)
        if day.weekday() < 5 and day not in off:
            remaining -= 1
    return _dated(day)


# -- weeks, year fractions, weekends of one's own -------------------------------------------------

_WEEK_STARTS = {1: 7, 2: 1, 11: 1, 12: 2, 13: 3, 14: 4, 15: 5, 16: 6, 17: 7}
"""WEEKNUM's return types: the ISO weekday (Monday 1 .. Sunday 7) its weeks start on."""


@register("WEEKNUM", num_disputed=True)
def _weeknum(value: Any, kind: Any = MISSING) -> Any:
    day, k = day_of(value), integer(kind, 1)
    if k == 21:
        return float(day.isocalendar()[1])
    start = _WEEK_STARTS.get(k)
    if start is None:
        return NUM
    if k >= 12:
        raise Uncomputable("WEEKNUM with weeks from Tuesday to Saturday: LibreOffice counts the last days differently")
    first = dt.date(day.year, 1, 1)
    offset = (first.isoweekday() - start) % 7
    return float(((day - first).days + offset) // 7 + 1)


@register("ISOWEEKNUM", num_disputed=True)
def _isoweeknum(value: Any) -> Any:
    return float(day_of(value).isocalendar()[1])


def _last_of_february(day: dt.date) -> bool:
    return day.month == 2 and day.day == calendar.monthrange(day.year, 2)[1]


def _days360(a: dt.date, b: dt.date, european: bool, february_end: bool) -> int:
    """Days between two dates counting 30-day months; the US method moves the last day of February
    to the 30th for a start date (and, with `february_end`, for an end date after one)."""
    d1, d2 = a.day, b.day
    if european:
        d1, d2 = min(d1, 30), min(d2, 30)
    else:
        if february_end and _last_of_february(a) and _last_of_february(b):
            d2 = 30
        if _last_of_february(a):
            d1 = 30
        if d2 == 31 and d1 >= 30:
            d2 = 30
        if d1 == 31:
            d1 = 30
    return (b.year - a.year) * 360 + (b.month - a.month) * 30 + d2 - d1


@register("DAYS360", num_disputed=True)
def _days360_fn(start: Any, end: Any, method: Any = MISSING) -> Any:
    european = flag(method, False)
    a, b = day_of(start), day_of(end)
    return float(_days360(a, b, european, february_end=False))


@register("YEARFRAC", num_disputed=True)
def _yearfrac(start: Any, end: Any, basis: Any = MISSING) -> Any:
    a, b, k = day_of(start), day_of(end), integer(basis, 0)
    if not 0 <= k <= 4:
        return NUM
    if a > b:
        a, b = b, a
    if k == 0:
        return _days360(a, b, european=False, february_end=True) / 360
    if k == 4:
        return _days360(a, b, european=True, february_end=False) / 360
    days = (b - a).days
    if k == 2:
        return days / 360
    if k == 3:
        return days / 365
    return days / _year_length(a, b)


def _year_length(a: dt.date, b: dt.date) -> float:
    """The year YEARFRAC's actual/actual basis divides by."""
    if a.year == b.year:
        return 366.0 if calendar.isleap(a.year) else 365.0
    within_a_year = b.year == a.year + 1 and (a.month, a.day) >= (b.month, b.day)
    if within_a_year:
        leap = (calendar.isleap(a.year) and (a.month, a.day) <= (2, 29)) or (
            calendar.isleap(b.year) and (b.month, b.day) >= (2, 29)
        )
        return 366.0 if leap else 365.0
    years = range(a.year, b.year + 1)
    return sum(366 if calendar.isleap(y) else 365 for y in years) / len(years)


def _weekend(arg: Any) -> set[int]:
    """The weekdays (Monday 0 .. Sunday 6) a weekend code or mask names."""
    if arg is MISSING:
        return {5, 6}
    v = value_of(arg)
    if v is None:
        raise Uncomputable("a weekend given by a blank cell: Excel takes the default, LibreOffice #VALUE!")
    if isinstance(v, str):
        if len(v) != 7 or any(ch not in "01" for ch in v) or v == "1111111":
            raise Raised(VALUE)
        return {i for i, ch in enumerate(v) if ch == "1"}
    code = integer(v)
    if 1 <= code <= 7:
        # 1: Saturday and Sunday, 2: Sunday and Monday ... 7: Friday and Saturday
        return {(code + 4) % 7, (code + 5) % 7}
    if 11 <= code <= 17:
        return {(code - 12) % 7}
    raise Raised(NUM)


@register("NETWORKDAYS.INTL", num_disputed=True)
def _networkdays_intl(start: Any, end: Any, weekend: Any = MISSING, holidays: Any = MISSING) -> Any:
    a, b, off, rest = day_of(start), day_of(end), _holidays(holidays), _weekend(weekend)
    sign = 1
    if a > b:
        a, b, sign = b, a, -1
    if (b - a).days > 200_000:
        return NUM
    count = 0
    day = a
    while day <= b:
        if day.weekday() not in rest and day not in off:
            count += 1
        day += dt.timedelta(days=1)
    return float(sign * count)


@register("WORKDAY.INTL", num_disputed=True)
def _workday_intl(start: Any, days: Any, weekend: Any = MISSING, holidays: Any = MISSING) -> Any:
    day, n, off, rest = day_of(start), integer(days), _holidays(holidays), _weekend(weekend)
    step = 1 if n >= 0 else -1
    remaining = abs(n)
    if remaining > 100_000:
        return NUM
    while remaining:
        day += dt.timedelta(days=step)
        if day.weekday() not in rest and day not in off:
            remaining -= 1
    return _dated(day)


@register("TIMEVALUE")
def _timevalue(value: Any) -> Any:
    v = value_of(value)
    if not isinstance(v, str):
        return VALUE
    n = num(v)
    return n - math.floor(n)
