import ConduitCore
import ConduitARQ
import Testing

// The DPLPMTUD state machine (RFC 8899 section 5.2) on its own, driven by hand: probes are
// acknowledged when they fit an imagined path and time out when they do not.

@Suite("Path MTU search (RFC 8899)")
struct LinkPathMTUSearchTests {
    static let probeTimeout: Int64 = 100_000_000  // 100 ms

    /// Sends the probe the search asks for; acknowledges it if it fits `limit`, else lets its
    /// timer run out. Returns the probe's size, nil if none was due.
    @discardableResult
    static func step(_ search: inout LinkPathMTUSearch, limit: Int, number: inout UInt64, now: inout ConduitInstant) -> Int? {
        guard let size = search.probeSizeDue else { return nil }
        search.probeSent(number: number, size: size, timeout: probeTimeout, now: now)
        if size <= limit {
            search.acknowledged(number...number, now: now)
        } else {
            now = LinkTime.add(now, probeTimeout)
            search.handleTimeout(now: now)
        }
        number += 1
        return size
    }

    static func converge(_ search: inout LinkPathMTUSearch, limit: Int, now: inout ConduitInstant) -> [Int] {
        var number: UInt64 = 0
        var sizes: [Int] = []
        while sizes.count < 100, let size = step(&search, limit: limit, number: &number, now: &now) { sizes.append(size) }
        return sizes
    }

    @Test func confirmsTheBaseThenTriesTheMaximumFirst() {
        var search = LinkPathMTUSearch(maxPacketSize: 1_488)
        #expect(search.state == .base)
        #expect(search.packetSize == 1_220)
        var now = ConduitInstant.zero
        let sizes = Self.converge(&search, limit: 9_000, now: &now)
        #expect(sizes == [1_220, 1_488])
        #expect(search.state == .searchComplete)
        #expect(search.packetSize == 1_488)
        #expect(search.nextDeadline == nil, "at the maximum there is nothing to raise")
    }

    @Test(arguments: [1_221, 1_300, 1_399, 1_400, 1_487])
    func convergesToThePathLimitWithinTheResolution(limit: Int) {
        var search = LinkPathMTUSearch(maxPacketSize: 1_488)
        var now = ConduitInstant.zero
        let sizes = Self.converge(&search, limit: limit, now: &now)
        #expect(search.state == .searchComplete)
        #expect(search.packetSize <= limit)
        #expect(search.packetSize > limit - search.settings.resolution)
        // Every size that failed failed MAX_PROBES times, and only those were lost.
        let failed = sizes.filter { $0 > limit }
        #expect(failed.count == search.counters.probesLost)
        #expect(Set(failed).allSatisfy { size in failed.filter { $0 == size }.count == search.settings.maxProbes })
    }

    @Test func aBlackHoleFallsBackToTheBaseAndSearchesAgain() {
        var search = LinkPathMTUSearch(maxPacketSize: 1_488)
        var now = ConduitInstant.zero
        _ = Self.converge(&search, limit: 1_488, now: &now)
        #expect(search.packetSize == 1_488)
        // Random losses of full-size packets, each followed by an acknowledged one: no black hole.
        for _ in 0..<20 {
            search.dataPacketLost(size: 1_488)
            search.dataPacketAcknowledged(size: 1_488)
        }
        #expect(search.packetSize == 1_488)
        // Losses of base-size packets say nothing about the PLPMTU.
        for _ in 0..<20 { search.dataPacketLost(size: 1_220) }
        #expect(search.packetSize == 1_488)
        // A run of full-size losses with nothing acknowledged: a black hole is suspected, and
        // confirmed by probes of the PLPMTU that are lost too (the path shrank to 1,300).
        for _ in 0..<search.settings.blackHoleLossThreshold { search.dataPacketLost(size: 1_488) }
        #expect(search.packetSize == 1_488)
        #expect(search.probeSizeDue == 1_488)
        var number: UInt64 = 1_000
        for _ in 0..<search.settings.maxProbes { Self.step(&search, limit: 1_300, number: &number, now: &now) }
        #expect(search.packetSize == 1_220)
        #expect(search.state == .base)
        #expect(search.counters.blackHoles == 1)
        // Packets sent under the old size, declared lost later, do not count against the new one.
        _ = Self.converge(&search, limit: 1_300, now: &now)
        #expect(search.state == .searchComplete)
        #expect((1_293...1_300).contains(search.packetSize))
        for _ in 0..<20 { search.dataPacketLost(size: 1_488) }
        #expect(search.counters.blackHoles == 1)
    }

    @Test func aBurstOfLossesTheConfirmationProbeGetsPastIsNoBlackHole() {
        var search = LinkPathMTUSearch(maxPacketSize: 1_488)
        var now = ConduitInstant.zero
        _ = Self.converge(&search, limit: 1_488, now: &now)
        for _ in 0..<search.settings.blackHoleLossThreshold * 2 { search.dataPacketLost(size: 1_488) }
        var number: UInt64 = 1_000
        #expect(Self.step(&search, limit: 1_488, number: &number, now: &now) == 1_488)
        #expect(search.packetSize == 1_488)
        #expect(search.probeSizeDue == nil)
        #expect(search.counters.blackHoles == 0)
    }

    @Test func repeatedProbeTimeoutsOfTheLossRecoveryMeanABlackHole() {
        var search = LinkPathMTUSearch(maxPacketSize: 1_488)
        var now = ConduitInstant.zero
        _ = Self.converge(&search, limit: 1_488, now: &now)
        search.probeTimeoutFired(count: 1)
        #expect(search.packetSize == 1_488, "one PTO is a tail loss")
        search.probeTimeoutFired(count: 2)
        #expect(search.packetSize == 1_220)
        #expect(search.state == .base)
    }

    @Test func lostBaseProbesMeanErrorThenARetryAfterTheRaiseTimer() {
        var search = LinkPathMTUSearch(maxPacketSize: 1_488)
        var now = ConduitInstant.zero
        _ = Self.converge(&search, limit: 1_000, now: &now)
        #expect(search.state == .error)
        #expect(search.packetSize == 1_220)
        #expect(search.probeSizeDue == nil)
        let retry = try! #require(search.nextDeadline)
        #expect(retry == LinkTime.add(now, LinkTime.nanoseconds(search.settings.raiseInterval)))
        search.handleTimeout(now: retry)
        #expect(search.state == .base)
        #expect(search.probeSizeDue == 1_220)
    }

    @Test func theRaiseTimerSearchesAboveACompletedSearch() {
        var search = LinkPathMTUSearch(maxPacketSize: 1_488)
        var now = ConduitInstant.zero
        _ = Self.converge(&search, limit: 1_300, now: &now)
        #expect(search.state == .searchComplete)
        let raise = try! #require(search.nextDeadline)
        search.handleTimeout(now: LinkTime.add(raise, -1))
        #expect(search.state == .searchComplete)
        now = raise
        search.handleTimeout(now: now)
        #expect(search.state == .search)
        // The path grew meanwhile.
        _ = Self.converge(&search, limit: 1_488, now: &now)
        #expect(search.packetSize == 1_488)
    }

    @Test func withNothingAboveTheBaseThereIsNothingToSearch() {
        let equal = LinkPathMTUSearch(maxPacketSize: 1_220)
        #expect(equal.state == .searchComplete)
        #expect(equal.probeSizeDue == nil)
        let smaller = LinkPathMTUSearch(maxPacketSize: 600)
        #expect(smaller.packetSize == 600)
        #expect(smaller.probeSizeDue == nil)
    }

    @Test func aLateAcknowledgementOfAnExpiredProbeChangesNothing() {
        var search = LinkPathMTUSearch(maxPacketSize: 1_488)
        var now = ConduitInstant.zero
        var number: UInt64 = 0
        Self.step(&search, limit: 9_000, number: &number, now: &now)  // base confirmed
        search.probeSent(number: 7, size: 1_488, timeout: Self.probeTimeout, now: now)
        now = LinkTime.add(now, Self.probeTimeout)
        search.handleTimeout(now: now)
        search.acknowledged(7...7, now: now)
        #expect(search.packetSize == 1_220)
        #expect(search.counters.probesLost == 1)
    }
}
