import ConduitCore

import ConduitImpairment
// Shared helpers for the ConduitCore tests: a seeded generator and frame builders/parsers.

/// The core's seeded generator, so every "random" test input is the same on every run.
typealias SplitMix64 = SeededRandom

extension SeededRandom {
    /// `bytes(count)` from a fresh copy, for one-line test data.
    func bytesOf(count: Int) -> [UInt8] {
        var copy = self
        return copy.bytes(count)
    }

    /// Fisher-Yates, driven by this generator only.
    mutating func shuffle<T>(_ array: inout [T]) {
        guard array.count > 1 else { return }
        for i in stride(from: array.count - 1, to: 0, by: -1) {
            array.swapAt(i, below(i + 1))
        }
    }
}

/// A data frame split into its validated header and a copy of its payload.
struct ParsedFrame: Hashable {
    var header: DataFrameHeader
    var payload: [UInt8]
}

enum Frames {
    /// Encodes one data frame with the production encoder.
    static func encode(_ header: DataFrameHeader, payload: [UInt8]) -> [UInt8] {
        var batch = DatagramBatch()
        payload.withUnsafeBytes { batch.appendDataFrame(header, payload: $0) }
        return batch[0]
    }

    static func parse(_ bytes: [UInt8]) -> Result<ParsedFrame, WireError> {
        bytes.withUnsafeBytes { raw in
            Result { () throws(WireError) -> ParsedFrame in
                let (header, payload) = try DataFrameHeader.parse(raw)
                return ParsedFrame(header: header, payload: Array(raw[payload]))
            }
        }
    }

    /// Only the error (or nil) of parsing `bytes` as a data frame.
    static func dataError(_ bytes: [UInt8]) -> WireError? {
        if case .failure(let error) = parse(bytes) { return error }
        return nil
    }

    static func parseControl(_ bytes: [UInt8]) -> Result<ControlFrame, WireError> {
        Result { () throws(WireError) -> ControlFrame in try ControlFrame.parse(bytes) }
    }

    static func controlError(_ bytes: [UInt8]) -> WireError? {
        if case .failure(let error) = parseControl(bytes) { return error }
        return nil
    }

    /// Whether the core's parsers accept `bytes` as a frame of either kind.
    static func isWellFormed(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { raw in
            guard let kind = try? FrameKind.peek(raw) else { return false }
            switch kind {
            case .data: return (try? DataFrameHeader.parse(raw)) != nil
            case .control: return (try? ControlFrame.parse(raw)) != nil
            }
        }
    }

    /// A data frame written byte by byte from the layout in `DataFrameHeader`'s documentation,
    /// independent of the encoder, so claims the encoder would never make can be expressed.
    static func raw(
        first: UInt8 = 0x10,
        flags: UInt8 = 0,
        stream: UInt16 = 100,
        type: UInt8 = 0,
        reserved5: UInt8 = 0,
        subgroup: UInt16 = 0,
        messageID: UInt32 = 1,
        offset: UInt32 = 0,
        total: UInt32,
        fragmentSize: UInt16,
        reserved22: UInt16 = 0,
        timestamp: UInt64 = 0,
        payloadLength: Int
    ) -> [UInt8] {
        var bytes: [UInt8] = [first, flags]
        bytes.appendBigEndian(stream)
        bytes.append(type)
        bytes.append(reserved5)
        bytes.appendBigEndian(subgroup)
        bytes.appendBigEndian(messageID)
        bytes.appendBigEndian(offset)
        bytes.appendBigEndian(total)
        bytes.appendBigEndian(fragmentSize)
        bytes.appendBigEndian(reserved22)
        bytes.appendBigEndian(timestamp)
        bytes.append(contentsOf: (0..<payloadLength).map { UInt8(truncatingIfNeeded: $0) })
        return bytes
    }

    /// Every frame of `message`, cut by the production ``Fragmenter``.
    static func fragment(
        _ message: [UInt8],
        streamID: StreamID = 100,
        type: SessionType,
        subgroupID: UInt16 = 0,
        messageID: UInt32,
        fragmentSize: Int = 1_200,
        timestamp: UInt64
    ) -> DatagramBatch {
        var fragmenter = Fragmenter(
            streamID: streamID,
            sessionType: type,
            subgroupID: subgroupID,
            messageID: messageID,
            totalLength: message.count,
            fragmentSize: fragmentSize,
            timestamp: timestamp
        )
        var batch = DatagramBatch()
        message.withUnsafeBytes { fragmenter.emitAll(of: $0, into: &batch) }
        return batch
    }

    /// The frames of `message`, parsed back (each must be valid).
    static func parsedFragments(
        _ message: [UInt8],
        streamID: StreamID = 100,
        type: SessionType,
        subgroupID: UInt16 = 0,
        messageID: UInt32,
        fragmentSize: Int = 1_200,
        timestamp: UInt64
    ) throws -> [ParsedFrame] {
        let batch = fragment(
            message, streamID: streamID, type: type, subgroupID: subgroupID,
            messageID: messageID, fragmentSize: fragmentSize, timestamp: timestamp
        )
        return try (0..<batch.count).map { try parse(batch[$0]).get() }
    }
}

extension [UInt8] {
    mutating func appendBigEndian<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.bigEndian) { append(contentsOf: $0) }
    }

    /// Overwrites `T.bitWidth / 8` bytes at `offset`, big-endian.
    mutating func setBigEndian<T: FixedWidthInteger>(_ value: T, at offset: Int) {
        Swift.withUnsafeBytes(of: value.bigEndian) { raw in
            for (i, byte) in raw.enumerated() { self[offset + i] = byte }
        }
    }
}

extension Reassembler {
    mutating func ingest(_ frame: ParsedFrame, now: ConduitInstant) -> Outcome {
        frame.payload.withUnsafeBytes { ingest(frame.header, payload: $0, now: now) }
    }
}

extension Reassembler.Outcome {
    var message: Reassembler.Message? {
        if case .complete(let message) = self { return message }
        return nil
    }

    var isIncomplete: Bool { self == .incomplete }
    var isDropped: Bool { self == .dropped }
}

extension ReceivedFragment {
    init(_ frame: ParsedFrame) {
        self.init(
            messageID: frame.header.messageID,
            offset: Int(frame.header.fragmentOffset),
            totalLength: Int(frame.header.totalLength),
            fragmentSize: Int(frame.header.fragmentSize),
            timestamp: frame.header.timestamp,
            bytes: frame.payload
        )
    }
}

extension ConduitInstant {
    static func ms(_ milliseconds: Int64) -> ConduitInstant { .zero + .milliseconds(milliseconds) }
}
