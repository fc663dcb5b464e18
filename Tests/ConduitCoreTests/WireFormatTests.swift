import ConduitCore
import Testing

// Wire format v1: data frame headers, control frames, and the strict parsers' refusals.

@Suite("Data frame header")
struct DataFrameHeaderTests {
    @Test("encodes the documented layout byte for byte")
    func exactBytes() throws {
        let header = DataFrameHeader(
            streamID: 500,
            sessionType: .reliableBytes,
            subgroupID: 0x0A0B,
            messageID: 0x0102_0304,
            fragmentOffset: 2_048,
            totalLength: 65_536,
            fragmentSize: 1_024,
            timestamp: 0x1122_3344_5566_7788
        )
        let payload = (0..<1_024).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let frame = Frames.encode(header, payload: payload)
        let expectedHeader: [UInt8] = [
            0x10, 0x00, 0x01, 0xF4,
            0x02, 0x00, 0x0A, 0x0B,
            0x01, 0x02, 0x03, 0x04,
            0x00, 0x00, 0x08, 0x00,
            0x00, 0x01, 0x00, 0x00,
            0x04, 0x00, 0x00, 0x00,
            0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
        ]
        #expect(Array(frame[..<32]) == expectedHeader)
        #expect(Array(frame[32...]) == payload)
        // The same bytes as the independent builder.
        #expect(frame[..<32] == Frames.raw(
            stream: 500, type: 2, subgroup: 0x0A0B, messageID: 0x0102_0304, offset: 2_048,
            total: 65_536, fragmentSize: 1_024, timestamp: 0x1122_3344_5566_7788, payloadLength: 0
        )[...])

        let parsed = try frame.withUnsafeBytes { raw in
            try Result { () throws(WireError) in try DataFrameHeader.parse(raw) }.get()
        }
        #expect(parsed.header == header)
        #expect(parsed.payload == 32..<1_056)
    }

    @Test("round trips for every session type", arguments: SessionType.allCases)
    func roundTrip(type: SessionType) throws {
        var generator = SplitMix64(seed: 0xD47A + UInt64(type.rawValue))
        for (stream, subgroup, total, fragmentSize, offset) in [
            (100, 0, 0, 1_200, 0),  // empty message: one empty fragment
            (999, 7, 1, 1_200, 0),
            (250, 0xFFFF, 5_000, 1_200, 4_800),  // short last fragment
            (731, 3, 5_000, 1_200, 1_200),  // full middle fragment
            (100, 0, type.maxSendSize, 65_535, 65_535),  // largest claim, largest fragment size
        ] as [(Int, UInt16, Int, UInt16, UInt32)] {
            let header = DataFrameHeader(
                streamID: StreamID(stream),
                sessionType: type,
                subgroupID: subgroup,
                messageID: UInt32(truncatingIfNeeded: generator.next()),
                fragmentOffset: offset,
                totalLength: UInt32(total),
                fragmentSize: fragmentSize,
                timestamp: generator.next()
            )
            let payload = generator.bytes(header.expectedPayloadLength)
            let parsed = try Frames.parse(Frames.encode(header, payload: payload)).get()
            #expect(parsed.header == header)
            #expect(parsed.payload == payload)
            #expect(parsed.header.fragmentIndex == Int(offset) / Int(fragmentSize))
        }
    }

    @Test("the empty message (total 0, one empty fragment) is valid")
    func emptyMessage() throws {
        let parsed = try Frames.parse(Frames.raw(total: 0, fragmentSize: 1_200, payloadLength: 0)).get()
        #expect(parsed.header.totalLength == 0)
        #expect(parsed.header.fragmentCount == 1)
        #expect(parsed.header.expectedPayloadLength == 0)
        #expect(parsed.payload.isEmpty)
        // One payload byte is one too many.
        #expect(Frames.dataError(Frames.raw(total: 0, fragmentSize: 1_200, payloadLength: 1))
            == .payloadLengthMismatch(expected: 0, got: 1))
    }

    @Test("exactly Limits.maxFragmentsPerMessage fragments is accepted, one more is not")
    func fragmentCountBoundary() throws {
        let limit = UInt32(Limits.maxFragmentsPerMessage)
        #expect(limit == 8_192)
        let last = try Frames.parse(Frames.raw(offset: limit - 1, total: limit, fragmentSize: 1, payloadLength: 1)).get()
        #expect(last.header.fragmentCount == 8_192)
        #expect(Frames.dataError(Frames.raw(total: limit + 1, fragmentSize: 1, payloadLength: 1))
            == .invalidFragmentSize(fragmentSize: 1, totalLength: limit + 1))
    }

    @Test("the largest legal claims are accepted")
    func largestClaims() throws {
        let maxMessage = UInt32(Limits.maxMessageSize)
        let maxBytes = UInt32(Limits.maxBytesSize)
        _ = try Frames.parse(Frames.raw(type: 0, total: maxMessage, fragmentSize: 65_535, payloadLength: 65_535)).get()
        _ = try Frames.parse(Frames.raw(type: 1, offset: 131_070, total: maxMessage, fragmentSize: 65_535, payloadLength: 2)).get()
        _ = try Frames.parse(Frames.raw(type: 2, offset: maxBytes - 512, total: maxBytes, fragmentSize: 512, payloadLength: 512)).get()
        _ = try Frames.parse(Frames.raw(type: 3, total: maxBytes, fragmentSize: 1_200, payloadLength: 1_200)).get()
    }
}

@Suite("Malformed data frames")
struct MalformedDataFrameTests {
    /// A valid 100-byte single-fragment message; the tests below break one thing at a time.
    static func valid(payloadLength: Int = 100) -> [UInt8] {
        Frames.raw(total: 100, fragmentSize: 100, payloadLength: payloadLength)
    }

    @Test("the base frame is valid")
    func baseIsValid() {
        #expect(Frames.dataError(Self.valid()) == nil)
    }

    @Test("empty and truncated datagrams")
    func truncated() {
        #expect(Frames.dataError([]) == .truncated(needed: 32, got: 0))
        #expect(Frames.dataError([0x10]) == .truncated(needed: 32, got: 1))
        #expect(Frames.dataError(Array(Self.valid()[..<31])) == .truncated(needed: 32, got: 31))
        // A frame's own header with no room for its claims is not truncated but mismatched.
        #expect(Frames.dataError(Array(Self.valid()[..<32])) == .payloadLengthMismatch(expected: 100, got: 0))
    }

    @Test("wrong version and unknown kind")
    func versionAndKind() {
        var frame = Self.valid()
        frame[0] = 0x20
        #expect(Frames.dataError(frame) == .unsupportedVersion(2))
        frame[0] = 0x00
        #expect(Frames.dataError(frame) == .unsupportedVersion(0))
        frame[0] = 0xF0
        #expect(Frames.dataError(frame) == .unsupportedVersion(15))
        frame[0] = 0x12
        #expect(Frames.dataError(frame) == .unknownFrameKind(2))
        frame[0] = 0x1F
        #expect(Frames.dataError(frame) == .unknownFrameKind(15))
        // A control frame's first byte is not a data frame.
        frame[0] = 0x11
        #expect(Frames.dataError(frame) == .unknownFrameKind(1))
    }

    @Test("reserved bits in byte 1, byte 5 and bytes 22-23", arguments: [
        (1, 0x01), (1, 0x80), (5, 0x01), (5, 0xFF), (22, 0x01), (23, 0x01), (23, 0x80),
    ] as [(Int, UInt8)])
    func reservedBits(index: Int, value: UInt8) {
        var frame = Self.valid()
        frame[index] = value
        #expect(Frames.dataError(frame) == .reservedBitsSet)
    }

    @Test("stream IDs outside 100...999", arguments: [0, 1, 99, 1_000, 0x7FFF, 0xFFFF] as [UInt16])
    func streamIDs(stream: UInt16) {
        var frame = Self.valid()
        frame.setBigEndian(stream, at: 2)
        #expect(Frames.dataError(frame) == .invalidStreamID(stream))
    }

    @Test("unknown session types", arguments: [4, 5, 0x80, 0xFF] as [UInt8])
    func sessionTypes(type: UInt8) {
        var frame = Self.valid()
        frame[4] = type
        #expect(Frames.dataError(frame) == .invalidSessionType(type))
    }

    @Test("message types may not claim more than 128 KiB")
    func messageTypeClaims() {
        for type: UInt8 in [0, 1] {
            #expect(Frames.dataError(Frames.raw(type: type, total: 128 * 1024 + 1, fragmentSize: 1_200, payloadLength: 1_200))
                == .messageTooLarge(claimed: 131_073, limit: 131_072))
            #expect(Frames.dataError(Frames.raw(type: type, total: 4 * 1024 * 1024, fragmentSize: 1_200, payloadLength: 1_200))
                == .messageTooLarge(claimed: 4_194_304, limit: 131_072))
            #expect(Frames.dataError(Frames.raw(type: type, total: 0xFFFF_FFFF, fragmentSize: 1_200, payloadLength: 1_200))
                == .messageTooLarge(claimed: 0xFFFF_FFFF, limit: 131_072))
        }
    }

    @Test("bytes types may not claim more than 4 MiB (nor 4 GiB)")
    func bytesTypeClaims() {
        for type: UInt8 in [2, 3] {
            #expect(Frames.dataError(Frames.raw(type: type, total: 4 * 1024 * 1024 + 1, fragmentSize: 1_200, payloadLength: 1_200))
                == .messageTooLarge(claimed: 4_194_305, limit: 4_194_304))
            #expect(Frames.dataError(Frames.raw(type: type, total: 0xFFFF_FFFF, fragmentSize: 65_535, payloadLength: 65_535))
                == .messageTooLarge(claimed: 0xFFFF_FFFF, limit: 4_194_304))
        }
    }

    @Test("fragment size zero")
    func fragmentSizeZero() {
        #expect(Frames.dataError(Frames.raw(total: 100, fragmentSize: 0, payloadLength: 100))
            == .invalidFragmentSize(fragmentSize: 0, totalLength: 100))
        #expect(Frames.dataError(Frames.raw(total: 0, fragmentSize: 0, payloadLength: 0))
            == .invalidFragmentSize(fragmentSize: 0, totalLength: 0))
    }

    @Test("fragment sizes implying more than 8192 fragments")
    func tooManyFragments() {
        // 4 MiB in 1-byte fragments: 4,194,304 fragments.
        #expect(Frames.dataError(Frames.raw(type: 2, total: 4 * 1024 * 1024, fragmentSize: 1, payloadLength: 1))
            == .invalidFragmentSize(fragmentSize: 1, totalLength: 4_194_304))
        // 65,535 fragments of one byte.
        #expect(Frames.dataError(Frames.raw(type: 0, total: 65_535, fragmentSize: 1, payloadLength: 1))
            == .invalidFragmentSize(fragmentSize: 1, totalLength: 65_535))
        // 4 MiB in 511-byte fragments: 8,209 fragments.
        #expect(Frames.dataError(Frames.raw(type: 3, total: 4 * 1024 * 1024, fragmentSize: 511, payloadLength: 511))
            == .invalidFragmentSize(fragmentSize: 511, totalLength: 4_194_304))
    }

    @Test("offsets off a fragment boundary (overlapping) or past the end")
    func offsets() {
        #expect(Frames.dataError(Frames.raw(offset: 25, total: 100, fragmentSize: 50, payloadLength: 50))
            == .invalidOffset(offset: 25, fragmentSize: 50, totalLength: 100))
        #expect(Frames.dataError(Frames.raw(offset: 1, total: 3_000, fragmentSize: 1_200, payloadLength: 1_200))
            == .invalidOffset(offset: 1, fragmentSize: 1_200, totalLength: 3_000))
        #expect(Frames.dataError(Frames.raw(offset: 100, total: 100, fragmentSize: 50, payloadLength: 0))
            == .invalidOffset(offset: 100, fragmentSize: 50, totalLength: 100))
        #expect(Frames.dataError(Frames.raw(offset: 150, total: 100, fragmentSize: 50, payloadLength: 0))
            == .invalidOffset(offset: 150, fragmentSize: 50, totalLength: 100))
        #expect(Frames.dataError(Frames.raw(offset: 0xFFFF_FFFF, total: 100, fragmentSize: 50, payloadLength: 0))
            == .invalidOffset(offset: 0xFFFF_FFFF, fragmentSize: 50, totalLength: 100))
        // The empty message has exactly one fragment, at offset 0.
        #expect(Frames.dataError(Frames.raw(offset: 1, total: 0, fragmentSize: 1, payloadLength: 0))
            == .invalidOffset(offset: 1, fragmentSize: 1, totalLength: 0))
    }

    @Test("payloads shorter or longer than the header implies")
    func payloadLengths() {
        #expect(Frames.dataError(Self.valid(payloadLength: 99)) == .payloadLengthMismatch(expected: 100, got: 99))
        #expect(Frames.dataError(Self.valid(payloadLength: 101)) == .payloadLengthMismatch(expected: 100, got: 101))
        // A zero-length payload for a nonzero total.
        #expect(Frames.dataError(Frames.raw(total: 10, fragmentSize: 10, payloadLength: 0))
            == .payloadLengthMismatch(expected: 10, got: 0))
        // Middle fragments carry exactly fragmentSize bytes; the last carries the remainder.
        #expect(Frames.dataError(Frames.raw(offset: 1_200, total: 3_000, fragmentSize: 1_200, payloadLength: 600))
            == .payloadLengthMismatch(expected: 1_200, got: 600))
        #expect(Frames.dataError(Frames.raw(offset: 2_400, total: 3_000, fragmentSize: 1_200, payloadLength: 1_200))
            == .payloadLengthMismatch(expected: 600, got: 1_200))
        #expect(Frames.dataError(Frames.raw(offset: 2_400, total: 3_000, fragmentSize: 1_200, payloadLength: 600)) == nil)
    }
}

@Suite("Control frames")
struct ControlFrameTests {
    static let frames: [ControlFrame] = [
        .hello(peer: "alice", dataSessionsSupported: true),
        .hello(peer: "bob", dataSessionsSupported: false),
        .hello(peer: PeerID(stringLiteral: String(repeating: "p", count: PeerID.maxBytes)), dataSessionsSupported: true),
        .sessionOpen(streamID: 100, subgroupID: 0, subgroup: nil, type: .reliableMessage),
        .sessionOpen(streamID: 999, subgroupID: 0, subgroup: nil, type: .unreliableMessage),
        .sessionOpen(streamID: 300, subgroupID: 2, subgroup: "team", type: .reliableBytes),
        .sessionOpen(streamID: 301, subgroupID: 0xFFFF, subgroup: "a b c", type: .unreliableBytes),
        .sessionUnsupported(streamID: 100, subgroupID: 0),
        .sessionUnsupported(streamID: 999, subgroupID: 42),
        .sessionClose(streamID: 500, subgroupID: 0, reason: .sessionEnd),
        .sessionClose(streamID: 500, subgroupID: 1, reason: .internal),
        .sessionClose(streamID: 500, subgroupID: 9, reason: .unsupported),
        .goodbye,
    ]

    @Test("round trips", arguments: frames)
    func roundTrip(frame: ControlFrame) throws {
        let bytes = frame.encoded
        #expect(bytes[0] == 0x11)
        #expect(bytes.count == ControlFrame.headerSize + (Int(bytes[8]) << 8 | Int(bytes[9])))
        #expect(try Frames.parseControl(bytes).get() == frame)
        // encode(into:) appends.
        var out: [UInt8] = [0xAA]
        frame.encode(into: &out)
        #expect(out == [0xAA] + bytes)
    }

    @Test("every close reason round trips", arguments: DataSessionCloseReason.allCases)
    func closeReasons(reason: DataSessionCloseReason) throws {
        let frame = ControlFrame.sessionClose(streamID: 123, subgroupID: 0, reason: reason)
        #expect(frame.encoded[5] == reason.rawValue)
        #expect(try Frames.parseControl(frame.encoded).get() == frame)
    }

    @Test("encodes the documented layout byte for byte")
    func exactBytes() {
        #expect(ControlFrame.hello(peer: "alice", dataSessionsSupported: true).encoded
            == [0x11, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, 0x01, 0x05] + Array("alice".utf8))
        #expect(ControlFrame.hello(peer: "bob", dataSessionsSupported: false).encoded
            == [0x11, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05, 0x00, 0x03] + Array("bob".utf8))
        #expect(ControlFrame.sessionOpen(streamID: 300, subgroupID: 2, subgroup: "team", type: .reliableBytes).encoded
            == [0x11, 0x02, 0x01, 0x2C, 0x02, 0x00, 0x00, 0x02, 0x00, 0x04] + Array("team".utf8))
        #expect(ControlFrame.sessionOpen(streamID: 100, subgroupID: 0, subgroup: nil, type: .unreliableMessage).encoded
            == [0x11, 0x02, 0x00, 0x64, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00])
        #expect(ControlFrame.sessionUnsupported(streamID: 258, subgroupID: 0x0102).encoded
            == [0x11, 0x03, 0x01, 0x02, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00])
        #expect(ControlFrame.sessionClose(streamID: 999, subgroupID: 0, reason: .unsupported).encoded
            == [0x11, 0x04, 0x03, 0xE7, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00])
        #expect(ControlFrame.goodbye.encoded == [0x11, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00])
    }

    @Test("truncated frames")
    func truncated() {
        #expect(Frames.controlError([]) == .truncated(needed: 10, got: 0))
        #expect(Frames.controlError([0x11]) == .truncated(needed: 10, got: 1))
        #expect(Frames.controlError(Array(ControlFrame.goodbye.encoded[..<9])) == .truncated(needed: 10, got: 9))
        // A hello cut short inside its body: the body length no longer matches.
        let hello = ControlFrame.hello(peer: "alice", dataSessionsSupported: true).encoded
        guard case .malformedControlBody = Frames.controlError(Array(hello.dropLast())) else {
            Issue.record("a cut hello must be a malformed body")
            return
        }
    }

    @Test("wrong version or a data frame's kind")
    func versionAndKind() {
        var frame = ControlFrame.goodbye.encoded
        frame[0] = 0x21
        #expect(Frames.controlError(frame) == .unsupportedVersion(2))
        frame[0] = 0x10
        #expect(Frames.controlError(frame) == .unknownFrameKind(0))
        frame[0] = 0x1E
        #expect(Frames.controlError(frame) == .unknownFrameKind(14))
    }

    @Test("unknown control types", arguments: [0, 6, 7, 0x80, 0xFF] as [UInt8])
    func unknownType(type: UInt8) {
        var frame = ControlFrame.goodbye.encoded
        frame[1] = type
        #expect(Frames.controlError(frame) == .unknownControlType(type))
    }

    @Test("body length disagreeing with the datagram")
    func bodyLengthMismatch() {
        for frame in ControlFrameTests.frames {
            var longer = frame.encoded
            longer.append(0x41)
            var claimsMore = frame.encoded
            claimsMore.setBigEndian(UInt16(claimsMore.count - 10 + 1), at: 8)
            for bad in [longer, claimsMore] {
                guard case .malformedControlBody = Frames.controlError(bad) else {
                    Issue.record("\(frame) with a wrong body length was not refused as a malformed body")
                    continue
                }
            }
        }
    }

    @Test("bad stream IDs", arguments: [0, 99, 1_000, 0xFFFF] as [UInt16])
    func badStreamIDs(stream: UInt16) {
        for frame in [
            ControlFrame.sessionOpen(streamID: 100, subgroupID: 0, subgroup: nil, type: .reliableMessage),
            .sessionOpen(streamID: 100, subgroupID: 1, subgroup: "g", type: .unreliableBytes),
            .sessionUnsupported(streamID: 100, subgroupID: 0),
            .sessionClose(streamID: 100, subgroupID: 0, reason: .sessionEnd),
        ] {
            var bytes = frame.encoded
            bytes.setBigEndian(stream, at: 2)
            #expect(Frames.controlError(bytes) == .invalidStreamID(stream))
        }
    }

    @Test("unknown close reason")
    func unknownCloseReason() {
        for reason: UInt8 in [4, 0xFF] {
            var bytes = ControlFrame.sessionClose(streamID: 100, subgroupID: 0, reason: .sessionEnd).encoded
            bytes[5] = reason
            guard case .malformedControlBody = Frames.controlError(bytes) else {
                Issue.record("close reason \(reason) was not refused")
                continue
            }
        }
    }

    @Test("unknown session type in sessionOpen")
    func unknownSessionType() {
        var bytes = ControlFrame.sessionOpen(streamID: 100, subgroupID: 0, subgroup: nil, type: .reliableMessage).encoded
        bytes[4] = 4
        #expect(Frames.controlError(bytes) == .invalidSessionType(4))
    }

    @Test("hello whose peer ID length disagrees with its body")
    func helloLengthMismatch() {
        let good = ControlFrame.hello(peer: "alice", dataSessionsSupported: true).encoded
        for claimed: UInt8 in [0, 4, 6, 0xFF] {
            var bytes = good
            bytes[11] = claimed
            guard case .malformedControlBody = Frames.controlError(bytes) else {
                Issue.record("hello claiming a \(claimed)-byte peer ID was not refused")
                continue
            }
        }
        // A body too short to hold flags and length.
        let short: [UInt8] = [0x11, 0x01, 0, 0, 0, 0, 0, 0, 0x00, 0x01, 0x01]
        guard case .malformedControlBody = Frames.controlError(short) else {
            Issue.record("a 1-byte hello body was not refused")
            return
        }
    }

    @Test("hello with undefined flags, an empty or an invalid peer ID")
    func helloContents() {
        var flags = ControlFrame.hello(peer: "alice", dataSessionsSupported: true).encoded
        flags[10] = 0x03
        #expect(Frames.controlError(flags) == .reservedBitsSet)
        let empty: [UInt8] = [0x11, 0x01, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0x01, 0x00]
        guard case .malformedControlBody = Frames.controlError(empty) else {
            Issue.record("an empty peer ID was accepted")
            return
        }
        let control: [UInt8] = [0x11, 0x01, 0, 0, 0, 0, 0, 0, 0x00, 0x03, 0x01, 0x01, 0x07]
        guard case .malformedControlBody = Frames.controlError(control) else {
            Issue.record("a peer ID with a control character was accepted")
            return
        }
    }

    @Test("bodies on frames that have none")
    func unexpectedBodies() {
        for frame in [
            ControlFrame.sessionUnsupported(streamID: 100, subgroupID: 0),
            .sessionClose(streamID: 100, subgroupID: 0, reason: .sessionEnd),
            .goodbye,
        ] {
            var bytes = frame.encoded
            bytes.setBigEndian(UInt16(1), at: 8)
            bytes.append(0x41)
            guard case .malformedControlBody = Frames.controlError(bytes) else {
                Issue.record("\(frame) with a body was accepted")
                continue
            }
        }
    }
}

@Suite("Datagram batch")
struct DatagramBatchTests {
    @Test("stores datagrams back to back and hands each out")
    func layout() {
        var batch = DatagramBatch(reservingBytes: 64, datagrams: 4)
        #expect(batch.isEmpty)
        batch.append([1, 2, 3])
        batch.append([])
        ([4, 5] as [UInt8]).withUnsafeBytes { batch.append($0) }
        #expect(batch.count == 3)
        #expect(batch.byteCount == 5)
        #expect(batch.storage == [1, 2, 3, 4, 5])
        #expect(batch.ends == [3, 3, 5])
        #expect(batch[0] == [1, 2, 3])
        #expect(batch[1] == [])
        #expect(batch[2] == [4, 5])
        #expect(batch.range(of: 2) == 3..<5)
        #expect(batch.withDatagram(2) { Array($0) } == [4, 5])

        var other = DatagramBatch()
        other.append([9])
        other.append([8, 7])
        batch.append(contentsOf: other)
        #expect(batch.ends == [3, 3, 5, 6, 8])
        #expect(batch[4] == [8, 7])

        batch.removeAll()
        #expect(batch.isEmpty)
        #expect(batch.byteCount == 0)
    }
}
