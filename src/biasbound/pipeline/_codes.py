"""The id columns' integer codes, each column coded once per certify run (private).

Made by ``_settings._check_frame`` (its repeated-key check) and handed on to ``_coverage.prepare``, the judge's
sorted model/item codes, the judgments digest, the observed neighbours and the judge card. The class is
:class:`biasbound.data.coded.ColumnCodes` (the readers' key check uses it too); this name stays for the pipeline.
"""

from __future__ import annotations

from biasbound.data.coded import ColumnCodes

__all__: list[str] = []

_ColumnCodes = ColumnCodes
