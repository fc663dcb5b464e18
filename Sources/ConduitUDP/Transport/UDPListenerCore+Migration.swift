import ConduitCore
import NIOCore

/// A link whose client address changes (RFC 9000 §9): the listener's side, on its event loop.
/// The decisions are ``UDPPathValidator``'s; this file sends the challenges and moves the link.
extension UDPListenerCore {
    /// RTP of `link` (by its client SSRC) from `from`, which is not the link's address.
    ///
    /// Only a datagram newer than any the link received from its address may open a validation
    /// (RFC 9000 §9.3: a path moves for the highest-numbered packet only), so a replayed capture
    /// cannot. The
    /// datagram is delivered (it is as trustworthy as one from the old address: the same SSRC,
    /// and with SRTP the same authentication) but the link keeps sending to its old address
    /// until the new one answers the challenge. The challenge (28 bytes) is less than three
    /// times the smallest RTP datagram (12), RFC 9000 §8.1's bound for an unvalidated address.
    func probe(_ data: ByteBuffer, header: RTPHeader, of link: UDPLink, from: SocketAddress, via channel: any Channel) {
        guard link.isNewer(header.sequence) else {
            state.value.statistics.pathProbesStale += 1
            return
        }
        guard state.value.addresses.canTake(Self.hostKey(from), from: Self.hostKey(link.peer)) else {
            state.value.statistics.pathProbesRefused += 1
            return
        }
        var random = SystemRandomNumberGenerator()
        let verdict = state.value.validator.probe(link: link.remoteSSRC, from: from, host: Self.hostKey(from), now: clock(), challenge: random.next())
        switch verdict {
        case .refused:
            state.value.statistics.pathProbesRefused += 1
            return
        case .pending:
            break
        case .sendChallenge(let challenge):
            send(.pathChallenge(ssrc: link.localSSRC, clientSSRC: link.remoteSSRC, challenge: challenge), to: from, via: channel)
            state.value.statistics.pathChallengesSent += 1
        }
        state.value.statistics.pathProbes += 1
        deliver(data, header: header, to: link, fromPeer: false)
    }

    /// A PATH-RESPONSE from `from`: moves the link there if it echoes the challenge sent there
    /// for that link (RFC 9000 §8.2.3, §9.3) and the address may hold another link.
    func validate(client: UInt32, server: UInt32, challenge: UInt64, from: SocketAddress) {
        guard let link = state.value.bySSRC[client], link.localSSRC == server,
            state.value.validator.respond(link: client, from: from, challenge: challenge, now: clock()) == .validated,
            state.value.links[from] == nil, state.value.links[link.peer] === link,
            state.value.addresses.move(from: Self.hostKey(link.peer), to: Self.hostKey(from), now: clock())
        else {
            state.value.statistics.pathResponsesRejected += 1
            return
        }
        let old = link.peer
        state.value.links[old] = nil
        state.value.links[from] = link
        link.move(to: from, offload: offload.segments(to: from))
        state.value.statistics.pathMigrations += 1
        observer?.logger.debug(
            "udp link moved", metadata: ["conduit.remote": "udp://\(SocketAddressing.describe(old))", "conduit.moved-to": "udp://\(SocketAddressing.describe(from))"])
    }

    /// The listener's counters, with the validations that have expired by now.
    func currentStatistics() -> UDPListenerStatistics {
        state.value.validator.expire(now: clock())
        var statistics = state.value.statistics
        statistics.pathValidationsTimedOut = state.value.validator.timedOut
        return statistics
    }

    /// The monotonic clock, as the listener's time.
    @Sendable static func now() -> ConduitInstant { ConduitInstant(nanoseconds: NIODeadline.now().uptimeNanoseconds) }
}
