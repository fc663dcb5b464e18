# Suites that Scripts/test.sh and Scripts/sanitizers.sh run in passes of their own (test.sh's
# comment says why), sourced by them. `simulations` are virtual-time runs that want
# the cooperative pool to themselves: synchronous runs of two reliability engines on one thread,
# and a conference through a loopback relay whose real tasks must keep up with the virtual clock
# the test advances (beside the whole suite under ThreadSanitizer it fell behind and timed out).
# RelayUDPTests (8 peers through 10 % loss): beside the rest under AddressSanitizer it once ran
# past its 3-minute limit (CI check of stop 28); it passed there in the run before.
# JoinStormTests: its generator sends each join once (a storm tool does not retransmit), and
# beside the rest the in-process relay, starved, let the kernel drop 8-17 of its 100 joins.
# UDPDontFragmentTests: path MTU discovery takes a probe unacknowledged within one probe timeout
# (about 26 ms on loopback) for lost, three in a row lower the size tried; beside the whole suite
# under AddressSanitizer, its two processes were starved that long, and the link settled at 1,220
# and 1,341 bytes instead of the path's 1,340 and 1,360 (fresh CI run of stop 38; passed on the retry).
# BenchRoomSendersTests: a relay process and 6 members forwarding 80,000 messages; beside the
# rest, a starved relay would let the senders' queues there grow until one was isolated.
# IsolatedSenderUDPTests: a room held for isolateAfter (5 s) by members that stop reading; beside
# the rest, a starved member that reads could take nothing for that long and be isolated too.
heavy="PionSCTPParityTests|BenchRoomSendersTests|IsolatedSenderUDPTests|RelayBackpressureUDPTests|ShardBackpressureUDPTests|RelayAbuseUDPTests|UDPListenerLimitTests|RelayUDPTests|JoinStormTests|UDPDontFragmentTests"
simulations="ReliabilityRateTests|PathMTUDiscoveryTests|CongestionControlTests|ARQFramePartsTests|ConferenceVirtualTimeTests"
# The simulations that are synchronous (one thread, no tasks): Scripts/sanitizers.sh leaves them
# out. ThreadSanitizer has nothing to check in them (a race needs two threads). Under
# AddressSanitizer they took 92 s of a CI run (4x their plain time) for memory that the address
# run checks elsewhere: the engine's packets and its frames built in place in the rest of that
# run (ReliabilitySendSharingTests, ReliabilityTransferTests, SansIOPairTests) and in the
# arq-engine fuzz target, which CI runs under AddressSanitizer too. Scripts/test.sh runs them.
synchronous="ReliabilityRateTests|PathMTUDiscoveryTests|CongestionControlTests|ARQFramePartsTests"
# Synchronous logic suites (sans-IO machines, wire formats, seeded simulations on virtual time)
# that take the most CPU: about 12 of the 13 s that every synchronous test together takes when
# run one at a time. A synchronous test holds a thread of the cooperative pool (two on two cores)
# until it returns, so in the first pass they held both for 7-10 s at its start, and every test
# waiting on the wall clock beside them stalled: trivial tests "passed after 9.9 s", in-process
# relay joins and connects ran out of their 10 s. They run in a pass of their own, all at once
# (nothing in them waits on the wall clock). Found by running the first pass one test at a time
# (--experimental-maximum-parallelization-width 1 --xunit-output) and ranking the synchronous
# tests' times by suite; every suite named here has only synchronous tests.
logic="ReliabilityTransferTests|FragmenterTests|HMACSHA256Tests|RelayBackpressureTests|InvitationRandomTests|LinkTableTests|ClusterPressureTests|CallMachineMalformedTests|ClusterMachineTests|InvitationScenarioTests|SansIOPairTests|ClusterInvitationTests|RelayGarbageTests|FuzzCorpusTests|FragmentAggregatorTests|ImpairmentModelTests|ClusterRoomRulesTests|InvitationWireTests|RoomMachineTests|SRTPSessionTests|SeededPayloadTests|CallMachineDataTests|InvitationAuthorizationTests|ClusterRosterTests|RelayRosterLogTests"
