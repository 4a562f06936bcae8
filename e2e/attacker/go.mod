// The fault suite's attacker (e2e/tests/fault.bats, the attack phases):
// stdlib only, so that it builds without a module download.
module poolkeeper.local/e2e/attacker

go 1.26
