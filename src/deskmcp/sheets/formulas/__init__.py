"""The formula engine: values and Excel's rules for them (`values`), text formatting (`formatting`),
the functions (`functions/`), a formula's tokens (`tokens`), parsing and evaluation (`engine`), the
dependency index between cells (`dependencies`), the `_xlfn.` prefixes (`prefixes`) and the work
one call may spend (`budget`). It knows no file format."""
