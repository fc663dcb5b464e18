import ConduitCore

extension FuzzTargets {
    /// Conduit's v1 frames as a call's datagrams carry them: `FrameKind.peek`, then the data or the
    /// control parser. What parses must re-encode to the same bytes and stay within the limits.
    static let coreFrame = FuzzTarget(
        name: "core-frame",
        summary: "FrameKind.peek, DataFrameHeader.parse, ControlFrame.parse: byte-identical re-encoding, bounded fragments"
    ) { (input) throws(FuzzFailure) in
        let check = Invariants(target: "core-frame")
        let kind: FrameKind
        do { kind = try FrameKind.peek(input) } catch { return false }
        switch kind {
        case .data:
            guard let (header, payload) = try? DataFrameHeader.parse(input) else { return false }
            try check.require(payload == DataFrameHeader.size..<input.count, "payload range \(payload) in a \(input.count)-byte frame")
            try check.require(Int(header.totalLength) <= header.sessionType.maxSendSize, "total length \(header.totalLength) over the type's limit")
            try check.require(header.fragmentCount >= 1 && header.fragmentCount <= Limits.maxFragmentsPerMessage, "fragment count \(header.fragmentCount)")
            try check.require(header.fragmentIndex < header.fragmentCount, "fragment index \(header.fragmentIndex) of \(header.fragmentCount)")
            try check.require(header.expectedPayloadLength == payload.count, "payload of \(payload.count) bytes, header expects \(header.expectedPayloadLength)")
            var encoded = [UInt8](repeating: 0, count: DataFrameHeader.size)
            encoded.withUnsafeMutableBytes { header.encode(into: $0) }
            try check.requireSameBytes(encoded, input[0..<DataFrameHeader.size], "data frame header \(header)")
        case .control:
            guard let frame = try? ControlFrame.parse(input) else { return false }
            try check.requireSameBytes(frame.encoded, input, "control frame \(frame)")
        }
        return true
    }
}
