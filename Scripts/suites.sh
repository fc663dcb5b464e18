# Suites that Scripts/test.sh and Scripts/sanitizers.sh run in passes of their own (test.sh's
# comment says why), sourced by them and by .ci/run. `simulations` are virtual-time runs that want
# the cooperative pool to themselves: synchronous runs of two reliability engines on one thread,
# and a conference through a loopback relay whose real tasks must keep up with the virtual clock
# the test advances (beside the whole suite under ThreadSanitizer it fell behind and timed out).
# RelayUDPTests (8 peers through 10 % loss): beside the rest under AddressSanitizer it once ran
# past its 3-minute limit (CI check of stop 28); it passed there in the run before.
heavy="PionSCTPParityTests|RelayBackpressureUDPTests|ShardBackpressureUDPTests|RelayAbuseUDPTests|UDPListenerLimitTests|RelayUDPTests"
simulations="ReliabilityRateTests|PathMTUDiscoveryTests|CongestionControlTests|ARQFramePartsTests|ConferenceVirtualTimeTests"
# The simulations that are synchronous (one thread, no tasks): ThreadSanitizer has nothing to
# check in them (a race needs two threads), so Scripts/sanitizers.sh thread leaves them out; they
# run everywhere else, AddressSanitizer included.
synchronous="ReliabilityRateTests|PathMTUDiscoveryTests|CongestionControlTests|ARQFramePartsTests"
