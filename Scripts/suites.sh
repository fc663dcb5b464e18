# Suites that Scripts/test.sh runs in passes of their own (its comment says why), sourced by it and
# by .ci/run. `simulations` are synchronous virtual-time runs of two reliability engines on one
# thread: ThreadSanitizer has nothing to check in them and slows them 5-15x, so its run skips them.
heavy="PionSCTPParityTests|RelayBackpressureUDPTests|RelayAbuseUDPTests|UDPListenerLimitTests"
simulations="ReliabilityRateTests|PathMTUDiscoveryTests|CongestionControlTests"
