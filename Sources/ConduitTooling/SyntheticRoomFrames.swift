import ConduitCore
import ConduitRooms

/// What a synthetic sender of the in-process room bench writes, encoded before the clock starts
/// with the wire's own codecs, so that sending costs the sender a `write` per batch and nothing
/// per message: the relay's work is what the bench measures.
///
/// The frames are the ones a `Conference` sends for one reliable-message session to everyone
/// (see `SessionLayer.openOutbound` and `ConferenceSessionHost`): a routed `sessionOpen` control
/// frame first, then one routed data frame per message (each message fits one fragment, numbered
/// from 0 as the session layer numbers them), then a routed `sessionClose`. Every frame is in a
/// `RelayEnvelope` naming member 0 (everyone in the room).
enum SyntheticRoomFrames {
    /// The stream every synthetic sender sends on (each sender's session is its own: the relay and
    /// the receivers tell senders apart by the member number the relay stamps).
    static let stream: StreamID = 100

    /// The envelope in front of every upstream frame: routed to everyone.
    static var toEveryone: (UInt8, UInt8, UInt8, UInt8) {
        let bytes = RelayEnvelope(kind: .routed, member: 0).bytes
        return (bytes[0], bytes[1], bytes[2], bytes[3])
    }

    /// The payload bytes of a data frame on a link of `mtu`-byte datagrams, as a conference
    /// fragments (its data frame header and the relay envelope taken off).
    static func fragmentSize(mtu: Int) -> Int { mtu - DataFrameHeader.size - RelayEnvelope.size }

    /// `messages` data frames of `size` payload bytes, in batches of `perBatch`, the first batch
    /// opening the session. `fill` marks the payload (it is not checked: the receivers peek only
    /// the headers), `timestamp` is each message's user timestamp.
    static func dataBatches(messages: Int, size: Int, perBatch: Int, mtu: Int, fill: UInt8) -> [DatagramBatch] {
        let payload = [UInt8](repeating: fill, count: size)
        let fragmentSize = UInt16(fragmentSize(mtu: mtu))
        var batches: [DatagramBatch] = []
        batches.reserveCapacity((messages + perBatch - 1) / perBatch)
        var batch = DatagramBatch(reservingBytes: perBatch * (RelayEnvelope.size + DataFrameHeader.size + size), datagrams: perBatch + 1)
        batch.append(sessionControl(.sessionOpen(streamID: stream, subgroupID: 0, subgroup: nil, type: .reliableMessage)))
        payload.withUnsafeBytes { bytes in
            for messageID in 0..<messages {
                let header = DataFrameHeader(
                    streamID: stream, sessionType: .reliableMessage, messageID: UInt32(messageID), fragmentOffset: 0,
                    totalLength: UInt32(size), fragmentSize: fragmentSize, timestamp: UInt64(messageID))
                batch.beginDatagram(prefix: toEveryone)
                batch.appendDataFrame(header, payload: bytes)
                if batch.count >= perBatch {
                    batches.append(batch)
                    batch = DatagramBatch(reservingBytes: perBatch * (RelayEnvelope.size + DataFrameHeader.size + size), datagrams: perBatch)
                }
            }
        }
        if !batch.isEmpty { batches.append(batch) }
        return batches
    }

    /// The batch that ends the sender's session (`close()`), after its last message.
    static func closingBatch() -> DatagramBatch {
        var batch = DatagramBatch()
        batch.append(sessionControl(.sessionClose(streamID: stream, subgroupID: 0, reason: .sessionEnd)))
        return batch
    }

    /// A session control frame in a routed envelope, as `ConferenceSessionHost.wrapControl` makes it.
    static func sessionControl(_ frame: ControlFrame) -> [UInt8] {
        RelayEnvelope.wrap(.routed, member: 0, frame.encoded)
    }

    /// A room control frame (join, ping, leave): kind 4, no envelope.
    static func room(_ frame: RoomControlFrame) -> DatagramBatch {
        var batch = DatagramBatch()
        batch.append(frame.encoded)
        return batch
    }
}
