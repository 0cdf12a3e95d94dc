// compile_cache: directory_storage's claims (single flight): a miss claims its key with a
// file `ENTRY.claim` beside the entry's place, created exclusively, holding who claimed
// it (claim.hpp's claim_owner: pid, boot id, process start time, host) and when, and
// kept open and locked by its claimant while it compiles (a locked claim is alive). Included
// by directory_storage.hpp; the protocol and its bounds are in docs/design.md.
#pragma once

#include <compile_cache/detail/per_thread.hpp>
#include <compile_cache/detail/platform.hpp>
#include <compile_cache/storage/claim.hpp>
#include <compile_cache/storage/directory/directory_storage.hpp>

#include <compile_cache/storage/directory/impl/directory_claims.ipp>
