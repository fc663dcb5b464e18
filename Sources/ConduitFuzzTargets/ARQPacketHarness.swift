import ConduitARQ
import ConduitCore

extension FuzzTargets {
    /// The reliability engine's packets: header, checksum trailer, then frames read one by one.
    /// Whatever reads must lie inside the packet, acknowledgement ranges must descend without
    /// running below 0, and writing the frames again with the engine's writer gives the same bytes.
    static let arqPacket = FuzzTarget(
        name: "arq-packet",
        summary: "LinkPacket.open, LinkFrameReader, LinkAckFrame ranges: in-bounds, descending, byte-identical rewrite"
    ) { (input) throws(FuzzFailure) in
        let check = Invariants(target: "arq-packet")
        var accepted = false
        for checksum in [false, true] {
            guard let (number, frames) = try? LinkPacket.open(input, expectChecksum: checksum) else { continue }
            try check.require(frames.lowerBound == LinkPacket.headerSize && frames.upperBound <= input.count && !frames.isEmpty,
                              "frames at \(frames) in a \(input.count)-byte packet")
            var reader = LinkFrameReader(packet: input, frames: frames)
            var writer = LinkPacketWriter()
            writer.begin(packetNumber: number, checksum: checksum, capacity: input.count)
            var count = 0
            while true {
                let frame: LinkFrame?
                do { frame = try reader.next() } catch { return false }  // refused part-way: nothing more to check
                guard let frame else { break }
                count += 1
                try check.require(count <= frames.count, "more frames than bytes")
                try rewrite(frame, from: input, into: &writer, check)
            }
            if checksum { writer.appendChecksum(using: .portable) }
            try check.requireSameBytes(writer.bytes, input, "packet \(number) with \(count) frames")
            accepted = true
        }
        return accepted
    }

    private static func rewrite(_ frame: LinkFrame, from packet: UnsafeRawBufferPointer, into writer: inout LinkPacketWriter,
                                _ check: Invariants) throws(FuzzFailure) {
        switch frame {
        case .ping:
            writer.appendPing()
        case .padding(let length):
            writer.appendPadding(length)
        case .ack(let ack):
            let ranges = ack.ranges(in: packet)
            try check.require(ranges.count == ack.additionalRangeCount + 1, "\(ranges.count) ranges for \(ack.additionalRangeCount) further")
            try check.require(ranges.first?.upperBound == ack.largestAcknowledged, "the first range does not end at the largest")
            for (higher, lower) in zip(ranges, ranges.dropFirst()) {
                try check.require(lower.upperBound + 1 < higher.lowerBound, "ranges \(higher) and \(lower) touch or overlap")
            }
            let countOffset = writer.appendAckHeader(largest: ack.largestAcknowledged, ackDelayMicroseconds: ack.ackDelayMicroseconds,
                                                     window: ack.receiveWindow, firstRange: ack.firstRange)
            writer.set16(UInt16(ack.additionalRangeCount), at: countOffset)
            for (higher, lower) in zip(ranges, ranges.dropFirst()) {
                writer.appendAckRange(gap: UInt32(higher.lowerBound - lower.upperBound - 2), length: UInt32(lower.upperBound - lower.lowerBound))
            }
        case .data(let data):
            try check.require(data.payload.lowerBound >= LinkPacket.headerSize && data.payload.upperBound <= packet.count,
                              "payload at \(data.payload) in a \(packet.count)-byte packet")
            if let part = data.part {
                try check.require(!data.payload.isEmpty && Int(part.offset) + data.payload.count <= Int(part.frameLength)
                                  && Int(part.frameLength) <= LinkPacket.maxFrameLength,
                                  "a part of \(data.payload.count) bytes at \(part.offset) of a \(part.frameLength)-byte frame")
            }
            writer.appendData(channel: data.channel, sequence: data.sequence, ordered: data.isOrdered,
                              lifetimeMilliseconds: data.remainingLifetimeMilliseconds, part: data.part, payload: ArraySlice(packet[data.payload]))
        case .forward(let channel, let cumulativeSequence):
            writer.appendForward(channel: channel, cumulativeSequence: cumulativeSequence)
        }
    }
}
