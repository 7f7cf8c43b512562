"""schemathesis hooks for the runs against record-server (RecordServerTests/APIFuzzTests,
scripts/api-fuzz.sh), loaded through the `hooks` key of their configuration."""

import schemathesis

# The one rule of the API that JSON Schema cannot state: it has no constraint between two
# parameters, so `since` later than `until` is schema-valid, and the server refuses it (400).
SINCE_AFTER_UNTIL = b"since must not be later than until"


@schemathesis.hook
def filter_failure(context, failure, case, response):
    """Drops only "valid input refused" for that refusal; every other failure stands."""
    refused_by_design = (
        failure.code == "ST202" and response.status_code == 400 and SINCE_AFTER_UNTIL in response.content
    )
    return not refused_by_design
