#if SCTP
import CUsrsctp
import CUsrsctpSupport
import ConduitCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A message read in parts so far; past the size limit only the fact is kept, to count its drop.
struct PartialMessage {
    var bytes: [UInt8] = []
    var isOversize = false
}

/// Reading the socket: user messages, DCEP and notifications, gathered from partial reads, and
/// only while the readers' inboxes have room (otherwise SCTP's receive window does the waiting).
extension SCTPConnection {
    private func inboxesHaveRoom() -> Bool {
        switch mode {
        case .conduit: return linkInbox.hasRoom()
        case .channels, .undecided:
            for record in channels.values { if let handle = record.handle, !handle.inbox.hasRoom() { return false } }
            return true
        }
    }

    func readAvailable() {
        let buffer = stack.receiveBuffer
        // Conduit messages are queued without waking the link's reader; wake it once at the end.
        defer { linkInbox.wake() }
        while state != .closed, !peerIsShuttingDown, let socket, inboxesHaveRoom() {
            var stream: UInt16 = 0, ppid: UInt32 = 0
            var isNotification: Int32 = 0, isEnd: Int32 = 0
            let count = conduit_sctp_receive(socket, buffer.baseAddress, buffer.count, &stream, &ppid, &isNotification, &isEnd)
            if count < 0 {
                let error = Int32(-count)
                if error == EAGAIN || error == EWOULDBLOCK || error == ENOTCONN && state == .connecting { return }
                peerClosed(.failed(SCTPErrors.system("reading from \(remoteDescription) failed", error).message))
                return
            }
            if count == 0 {
                peerShuttingDown()
                return
            }
            let chunk = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
            let key = isNotification != 0 ? -1 : Int(stream)
            if isEnd == 0 || partials[key] != nil {
                // Part of a larger message: gather it, within the message size limit and the
                // limit of all partly read messages together (past either, it is dropped, counted).
                var part = partials.removeValue(forKey: key) ?? PartialMessage()
                partialBytes -= part.bytes.count
                if part.bytes.count + count > limits.maxMessageSize || partialBytes + part.bytes.count + count > Self.maxPartialBytes {
                    part.isOversize = true
                    part.bytes = []
                }
                if !part.isOversize { part.bytes.append(contentsOf: chunk) }
                guard isEnd != 0 else {
                    partialBytes += part.bytes.count
                    partials[key] = part
                    continue
                }
                if part.isOversize {
                    statistics.droppedOversize += 1
                    continue
                }
                part.bytes.withUnsafeBytes { handle(isNotification != 0, stream: stream, ppid: ppid, $0) }
            } else {
                handle(isNotification != 0, stream: stream, ppid: ppid, chunk)
            }
        }
    }

    private func handle(_ isNotification: Bool, stream: UInt16, ppid: UInt32, _ bytes: UnsafeRawBufferPointer) {
        if isNotification {
            handleNotification(bytes)
        } else {
            receive(stream: stream, ppid: ppid, bytes)
        }
    }

    /// SCTP_COMM_LOST after the peer's ABORT carries that chunk in `sac_info` (offset 20, up to
    /// `sac_length`); after a timeout there is none.
    static func lossReason(_ bytes: UnsafeRawBufferPointer) -> SCTPCloseReason {
        let length = min(Int(bytes.loadUnaligned(fromByteOffset: 4, as: UInt32.self)), bytes.count)
        guard length > 20 else { return .lost }
        let info = bytes[20..<length]
        return info.first == 6 ? .abortedByPeer(reason: SCTPCloseReason.abortReason(fromChunk: info)) : .lost
    }

    private func handleNotification(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count >= 8 else { return }
        let type = bytes.loadUnaligned(as: UInt16.self)
        switch Int32(type) {
        case SCTP_ASSOC_CHANGE:
            guard bytes.count >= 10 else { return }
            switch Int32(bytes.loadUnaligned(fromByteOffset: 8, as: UInt16.self)) {
            case SCTP_COMM_UP: established()
            case SCTP_CANT_STR_ASSOC:
                fail(connecting: ConduitError(.connectionFailed, "no SCTP association with \(remoteDescription): INIT went unanswered \(limits.initAttempts) times"))
            case SCTP_COMM_LOST:
                if state == .connecting {
                    fail(connecting: ConduitError(.connectionFailed, "the SCTP association with \(remoteDescription) could not be set up"))
                } else {
                    peerClosed(Self.lossReason(bytes))
                }
            case SCTP_SHUTDOWN_COMP: peerClosed(.shutDownByPeer)
            default: break
            }
        case SCTP_STREAM_RESET_EVENT:
            guard bytes.count >= 12 else { return }
            let flags = Int32(bytes.loadUnaligned(fromByteOffset: 2, as: UInt16.self))
            let length = min(Int(bytes.loadUnaligned(fromByteOffset: 4, as: UInt32.self)), bytes.count)
            let streams = stride(from: 12, to: length - 1, by: 2).map { bytes.loadUnaligned(fromByteOffset: $0, as: UInt16.self) }
            if flags & (SCTP_STREAM_RESET_DENIED | SCTP_STREAM_RESET_FAILED) != 0 {
                statistics.resetsRefused += 1
                if flags & SCTP_STREAM_RESET_OUTGOING_SSN != 0 { retryReset(streams) }
                return
            }
            if flags & SCTP_STREAM_RESET_INCOMING_SSN != 0 { for stream in streams { incomingReset(stream) } }
            if flags & SCTP_STREAM_RESET_OUTGOING_SSN != 0 { for stream in streams { outgoingResetDone(stream) } }
        case SCTP_SEND_FAILED_EVENT:
            statistics.sendsAbandoned += 1
        default:
            break
        }
    }
}
#endif
