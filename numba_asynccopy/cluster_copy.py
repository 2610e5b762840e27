"""The cluster bulk copy, kept importable here: it is part of the bulk family (``bulk``)."""

from .bulk import BULK_ALIGN, MAX_TX, BulkClusterOptions, cp_async_bulk_cluster, ptx_cp_async_bulk_cluster, validate_cp_async_bulk_cluster  # noqa: F401,E501
