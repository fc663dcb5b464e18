package import ConduitCore

/// The listener's path validation for links whose client address changes (NAT rebinding, Wi-Fi
/// to cellular), after QUIC (RFC 9000 §9 "Connection Migration", §8.2 "Path Validation").
///
/// Sans-IO: it sends nothing and reads no clock; the listener passes the time, the challenge
/// values (from a system random generator) and the addresses, and acts on what it answers.
///
/// - A datagram of link L from an address other than L's (its SSRC names L, and it is newer
///   than anything L received: RFC 9000 §9.3 moves a path only for the highest-numbered packet,
///   so a replay cannot) opens a validation of that address for L with an unpredictable 64-bit
///   challenge (§8.2.1), sent to that address only. It does not move L.
/// - Only a response from that same address, naming L and echoing the challenge (§8.2.2, §8.2.3:
///   "received on the path being validated"), moves L there. Anything else is counted and ignored.
/// - Validations expire after ``Limits/timeout`` (§8.2.4 abandons a path after about 3 PTO);
///   their number is capped per link, per IP address and in total (§9.3.1: no unbounded state for
///   an attacker), so a flood of spoofed addresses costs the listener a bounded table.
package struct UDPPathValidator<Address: Hashable & Sendable>: Sendable {
    /// How many validations may be open and for how long (the memberwise initializer overrides
    /// what a test needs).
    package struct Limits: Sendable, Hashable {
        /// Open validations in total (every link, every address).
        var maxPending = 64
        /// Open validations per IP address (any port).
        var maxPendingPerHost = 8
        /// Open validations per link (each to another address).
        var maxPendingPerLink = 4
        /// How long a challenge waits for its response.
        var timeout = Duration.seconds(3)
        /// The least time between two sends of one challenge (more datagrams from the new
        /// address resend it, for a lost challenge or response).
        var resendInterval = Duration.milliseconds(200)
    }

    /// One open validation: `link` (its listener-side SSRC) may move to `address`.
    package struct Pending: Sendable, Hashable {
        package var link: UInt32
        package var address: Address
        package var host: String
        package var challenge: UInt64
        package var expiry: ConduitInstant
        package var lastSent: ConduitInstant
    }

    /// What to do with a datagram of a link from a new address.
    package enum ProbeVerdict: Sendable, Hashable {
        /// Send this challenge to the address (a new validation, or a resend of an open one).
        case sendChallenge(UInt64)
        /// A validation of this address is open and its challenge went out recently: nothing to send.
        case pending
        /// No room for another validation (a cap is reached): the datagram is dropped.
        case refused
    }

    /// What a path response did.
    package enum ResponseVerdict: Sendable, Hashable {
        /// The address is validated: move the link there (every other validation of it is closed).
        case validated
        /// No open validation of this link from this address with this challenge.
        case rejected
    }

    package let limits: Limits
    package private(set) var pending: [Pending] = []
    /// Validations that expired without their response.
    package private(set) var timedOut = 0

    package init(limits: Limits = Limits()) { self.limits = limits }

    /// A datagram of `link` came from `address` (on IP `host`), not the link's. `challenge` is a
    /// fresh unpredictable value, used only if a validation opens now.
    package mutating func probe(link: UInt32, from address: Address, host: String, now: ConduitInstant, challenge: UInt64) -> ProbeVerdict {
        expire(now: now)
        if let index = pending.firstIndex(where: { $0.link == link && $0.address == address }) {
            guard pending[index].lastSent + limits.resendInterval <= now else { return .pending }
            pending[index].lastSent = now
            return .sendChallenge(pending[index].challenge)
        }
        guard pending.count < limits.maxPending,
            pending.count(where: { $0.host == host }) < limits.maxPendingPerHost,
            pending.count(where: { $0.link == link }) < limits.maxPendingPerLink
        else { return .refused }
        pending.append(Pending(link: link, address: address, host: host, challenge: challenge, expiry: now + limits.timeout, lastSent: now))
        return .sendChallenge(challenge)
    }

    /// A path response naming `link` and echoing `challenge` came from `address`.
    package mutating func respond(link: UInt32, from address: Address, challenge: UInt64, now: ConduitInstant) -> ResponseVerdict {
        expire(now: now)
        guard pending.contains(where: { $0.link == link && $0.address == address && $0.challenge == challenge }) else { return .rejected }
        forget(link: link)
        return .validated
    }

    /// Closes every validation of `link` (it moved, or it ended).
    package mutating func forget(link: UInt32) {
        pending.removeAll { $0.link == link }
    }

    /// Closes the validations whose time ran out, counting them in ``timedOut``.
    package mutating func expire(now: ConduitInstant) {
        let before = pending.count
        pending.removeAll { $0.expiry <= now }
        timedOut += before - pending.count
    }
}

/// RTP sequence numbers in serial-number arithmetic (RFC 1982, as RFC 3550 §A.1 uses them): what
/// tells a fresh datagram from a replayed one when it arrives from a new address.
package struct RTPSequenceHighWater: Sendable, Hashable {
    /// The highest sequence number received, nil before the first.
    package private(set) var highest: UInt16?

    package init() {}

    /// Whether `sequence` is newer than every sequence number seen (within half the space ahead).
    package func isNewer(_ sequence: UInt16) -> Bool {
        guard let highest else { return true }
        let ahead = sequence &- highest
        return ahead != 0 && ahead < 0x8000
    }

    /// Records a received sequence number.
    package mutating func record(_ sequence: UInt16) {
        if isNewer(sequence) { highest = sequence }
    }
}
