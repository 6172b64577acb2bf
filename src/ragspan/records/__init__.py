"""Typed records of ragspan's reports (msgspec structs): what a report holds, decoded and
validated in one pass from its bytes."""
