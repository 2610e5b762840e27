"""Host-side helpers: cluster launch, large dynamic shared memory, tensor maps."""
