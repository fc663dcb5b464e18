public import ConduitCore

extension UDPTransport.Configuration {
    /// What a UDP listener lets remote addresses hold. A link exists only once its address has
    /// returned a cookie (the HELLO costs the listener nothing), so every limit here counts proven
    /// addresses, never spoofed ones. Refusals are counted in `UDPListenerStatistics`.
    public struct ListenerLimits: Sendable, Hashable {
        /// Links the listener holds at once (established and not yet closed), default 4,096.
        public var maxLinks: Int
        /// Links one IP address (any port) may hold at once, default 256: one host cannot take
        /// every slot, however many ports it uses.
        public var maxLinksPerAddress: Int
        /// Links one IP address may establish per second (bursts up to one second's worth),
        /// default 100.
        public var handshakesPerSecondPerAddress: Int
        /// Established links waiting for the app's `accept`, default 64.
        public var maxAwaitingAccept: Int
        /// Links the listener establishes per second from all addresses together (bursts up to
        /// one second's worth), default 1,000: a storm from many addresses, each within its own
        /// rate, still cannot spend on new links the CPU that established links need. Charged
        /// only once an address's own limits admitted it, so one host cannot use it up alone.
        public var handshakesPerSecond: Int
        /// Datagrams read from the socket in one burst at which the listener takes itself for
        /// overloaded, default 32: the kernel had that many queued, so every datagram (an
        /// established link's too) waited behind them. Each such burst halves the rate of new
        /// links the listener takes (at most every 100 ms, never below a twentieth of
        /// `handshakesPerSecond`; a tenth more for every 100 ms without one), and for 100 ms
        /// HELLOs are answered at most four per link allowed (what is left unanswered is counted
        /// in `shedUnderLoad`; clients retransmit), so that a storm of joins gets only the CPU
        /// that established links leave, and joins still get in at the floor's rate. A burst is at most 128
        /// datagrams (NIO's 4 reads of up to 32), so a value above that never sheds.
        public var overloadBurst: Int

        /// Limits; every field defaults as documented on it.
        public init(
            maxLinks: Int = 4_096, maxLinksPerAddress: Int = 256, handshakesPerSecondPerAddress: Int = 100, maxAwaitingAccept: Int = 64,
            handshakesPerSecond: Int = 1_000, overloadBurst: Int = 32
        ) {
            self.maxLinks = maxLinks
            self.maxLinksPerAddress = maxLinksPerAddress
            self.handshakesPerSecondPerAddress = handshakesPerSecondPerAddress
            self.maxAwaitingAccept = maxAwaitingAccept
            self.handshakesPerSecond = handshakesPerSecond
            self.overloadBurst = overloadBurst
        }

        /// Throws `invalidConfiguration` naming the field when a limit is below 1.
        public func validate() throws(ConduitError) {
            for (name, value) in [
                ("maxLinks", maxLinks), ("maxLinksPerAddress", maxLinksPerAddress),
                ("handshakesPerSecondPerAddress", handshakesPerSecondPerAddress), ("maxAwaitingAccept", maxAwaitingAccept),
                ("handshakesPerSecond", handshakesPerSecond), ("overloadBurst", overloadBurst),
            ] where value < 1 {
                throw ConduitError(.invalidConfiguration, "listener limit \(name)=\(value) must be at least 1")
            }
        }
    }
}

/// Links and handshake rate per remote IP address, for ``UDPTransport/Configuration/ListenerLimits``.
/// Entries exist for addresses that proved themselves (returned a cookie). An entry is forgotten
/// once it holds nothing: no link, and a full handshake bucket (no handshake in the last second).
/// Forgetting one whose bucket was still being refilled gave its address a full bucket again, so a
/// host that closed its links could exceed its rate (the udp-listener fuzz target's finding). The
/// table is swept when it doubles, so each sweep is paid for by the admissions that grew it.
package struct UDPAddressLedger {
    package struct Entry {
        package var links = 0
        var handshakes: EventRateLimiter
    }

    let limits: UDPTransport.Configuration.ListenerLimits
    package private(set) var entries: [String: Entry] = [:]
    /// The table's size at which it is next swept.
    private var sweepAt: Int
    /// Handshakes of every address together (`handshakesPerSecond`); created at the first.
    private var allHandshakes: EventRateLimiter?

    package init(limits: UDPTransport.Configuration.ListenerLimits) {
        self.limits = limits
        sweepAt = 2 * limits.maxLinks
    }

    package enum Verdict { case admitted, tooManyLinks, tooManyHandshakes, tooManyHandshakesInAll }

    /// Charges one handshake to `address` at `now` and, if its limits and then the listener's
    /// rate allow it, counts its new link. A host refused by its own limits charges nothing to
    /// the listener's rate.
    package mutating func admit(_ address: String, now: ConduitInstant) -> Verdict {
        if entries.count > sweepAt {
            entries = entries.filter { $0.value.links > 0 || !$0.value.handshakes.isFull(at: now) }
            sweepAt = max(2 * limits.maxLinks, 2 * entries.count)
        }
        var entry = entries[address] ?? Entry(handshakes: EventRateLimiter(perSecond: limits.handshakesPerSecondPerAddress, now: now))
        defer { entries[address] = entry }
        guard entry.links < limits.maxLinksPerAddress else { return .tooManyLinks }
        guard entry.handshakes.admit(now: now) else { return .tooManyHandshakes }
        var all = allHandshakes ?? EventRateLimiter(perSecond: limits.handshakesPerSecond, now: now)
        defer { allHandshakes = all }
        guard all.admit(now: now) else { return .tooManyHandshakesInAll }
        entry.links += 1
        return .admitted
    }

    /// A link of `address` ended.
    package mutating func release(_ address: String) {
        guard let links = entries[address]?.links, links > 0 else { return }
        entries[address]!.links = links - 1
    }
}

extension UDPAddressLedger {
    /// Whether a link of `old` may move to `new` without `new` exceeding `maxLinksPerAddress`
    /// (a move within one IP address always may).
    package func canTake(_ new: String, from old: String) -> Bool {
        new == old || (entries[new]?.links ?? 0) < limits.maxLinksPerAddress
    }

    /// Moves one link's count from `old` to `new`; false (nothing changed) if `new` is full.
    /// A move is not a handshake: it does not charge `new`'s handshake rate.
    package mutating func move(from old: String, to new: String, now: ConduitInstant) -> Bool {
        guard canTake(new, from: old) else { return false }
        guard new != old else { return true }
        release(old)
        var entry = entries[new] ?? Entry(handshakes: EventRateLimiter(perSecond: limits.handshakesPerSecondPerAddress, now: now))
        entry.links += 1
        entries[new] = entry
        return true
    }
}
