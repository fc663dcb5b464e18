import Conduit
package import ConduitImpairment

/// Verifiable payloads for `conduit send` and `conduit listen`.
///
/// Message `seq` of a run with seed `S` and length `n` is a byte string fixed by `(S, seq, n)`.
/// The sender puts `seq` and `S` into the user timestamp (`seq << 32 | S`), so the receiver can
/// regenerate the exact bytes it should have got from the timestamp and the received length, and
/// compare every byte. That is stronger than a digest and costs no payload bytes, so it works for
/// 1-byte and even empty messages, and a receiver needs nothing from the sender but the message.
/// A truncated or padded message fails too: the length is part of the generator's seed, so the
/// bytes regenerated for another length differ.
package enum SeededPayload {
    /// `UInt64(seq) << 32 | UInt64(seed)`: what the sender passes as the message timestamp.
    package static func timestamp(seed: UInt32, seq: UInt32) -> UInt64 {
        UInt64(seq) << 32 | UInt64(seed)
    }

    /// The seed (low 32 bits) and sequence number (high 32 bits) a timestamp carries.
    package static func decode(timestamp: UInt64) -> (seed: UInt32, seq: UInt32) {
        (UInt32(truncatingIfNeeded: timestamp), UInt32(truncatingIfNeeded: timestamp >> 32))
    }

    /// The `count` bytes of message `seq` of the run seeded with `seed`.
    package static func bytes(seed: UInt32, seq: UInt32, count: Int) -> [UInt8] {
        precondition(count >= 0, "a payload length is never negative")
        // No capacity: the initializer would write into the shared empty-array storage (a race).
        guard count > 0 else { return [] }
        let stream = Stream(seed: seed, seq: seq, count: count)
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            let raw = UnsafeMutableRawBufferPointer(buffer)
            var word = 0
            while (word + 1) * 8 <= count {
                raw.storeBytes(of: stream.word(word).littleEndian, toByteOffset: word * 8, as: UInt64.self)
                word += 1
            }
            var tail = stream.word(word)
            for index in (word * 8)..<count {
                buffer[index] = UInt8(truncatingIfNeeded: tail)
                tail >>= 8
            }
            initialized = count
        }
    }

    /// Whether `bytes` are exactly the payload that `timestamp` and their length call for.
    /// Compares as it generates, without building the expected message.
    package static func matches(_ bytes: [UInt8], timestamp: UInt64) -> Bool {
        let (seed, seq) = decode(timestamp: timestamp)
        let stream = Stream(seed: seed, seq: seq, count: bytes.count)
        return bytes.withUnsafeBytes { buffer in
            var word = 0
            // Word by word (the verifier is on the benchmarks' hot path), then the tail.
            while (word + 1) * 8 <= buffer.count {
                guard buffer.loadUnaligned(fromByteOffset: word * 8, as: UInt64.self) == stream.word(word).littleEndian else { return false }
                word += 1
            }
            var tail = stream.word(word)
            for index in (word * 8)..<buffer.count {
                guard buffer[index] == UInt8(truncatingIfNeeded: tail) else { return false }
                tail >>= 8
            }
            return true
        }
    }

    /// The length of message `seq`: log-uniform in `sizes`, fixed by `(seed, seq)`, so the sender
    /// keeps no table of what it sent.
    package static func size(seed: UInt32, seq: UInt32, in sizes: ClosedRange<Int>) -> Int {
        var generator = SeededRandom(seed: (UInt64(seed) << 32 | UInt64(seq)) ^ 0xA076_1D64_78BD_642F)
        return generator.logUniformSize(in: sizes)
    }

    /// Message `seq` of a run: its bytes (sized from `sizes`) and the timestamp to send them with.
    package static func message(seed: UInt32, seq: UInt32, sizes: ClosedRange<Int>) -> (bytes: [UInt8], timestamp: UInt64) {
        let count = size(seed: seed, seq: seq, in: sizes)
        return (bytes(seed: seed, seq: seq, count: count), timestamp(seed: seed, seq: seq))
    }

    /// The bytes of one message as 64-bit words: a key drawn once from `(seed, seq, count)` with
    /// SplitMix64, then word `i` is one multiply-xorshift of `key ^ i`. Each word is independent of
    /// the others (no generator state to carry from word to word), so the CPU generates and checks
    /// several at once; the payloads of `conduit send` and `bench` come from here at hundreds of
    /// thousands of messages per second.
    struct Stream {
        let key: UInt64

        init(seed: UInt32, seq: UInt32, count: Int) {
            var generator = SeededRandom(seed: (UInt64(seed) << 32 | UInt64(seq)) ^ (UInt64(count) &* 0xD6E8_FEB8_6659_FD93))
            key = generator.next()
        }

        @inline(__always)
        func word(_ index: Int) -> UInt64 {
            let z = (key ^ UInt64(truncatingIfNeeded: index)) &* 0x9E37_79B9_7F4A_7C15
            return z ^ (z >> 29)
        }
    }
}

extension SeededRandom {
    /// A size in `range`, log-uniformly distributed: each power-of-two band that meets the range
    /// is equally likely (0, when in range, is a band of its own), then uniform within the band's
    /// part of the range. The range version of ``logUniformSize(max:)``.
    package mutating func logUniformSize(in range: ClosedRange<Int>) -> Int {
        precondition(range.lowerBound >= 0, "sizes are never negative")
        guard range.lowerBound < range.upperBound else { return range.lowerBound }
        // Band b > 0 holds 2^(b-1) ... 2^b - 1; band 0 holds 0.
        func band(of value: Int) -> Int { value == 0 ? 0 : Int.bitWidth - value.leadingZeroBitCount }
        let first = band(of: range.lowerBound)
        let last = band(of: range.upperBound)
        let chosen = first + Int(next() % UInt64(last - first + 1))
        guard chosen > 0 else { return 0 }
        let low = Swift.max(range.lowerBound, 1 << (chosen - 1))
        let high = Swift.min(range.upperBound, chosen >= Int.bitWidth - 1 ? Int.max : (1 << chosen) - 1)
        return low + Int(next() % UInt64(high - low + 1))
    }
}

/// Classifies received seeded messages, as `conduit listen` does for each stream.
///
/// A message is **corrupted** if its bytes are not what its timestamp and length call for (it is
/// then not remembered, so a later intact copy still counts); otherwise a **duplicate** if its
/// (seed, seq) was seen before; otherwise **out of order** if a higher seq of that seed was seen
/// already; otherwise **ok**. Ok and out-of-order messages are the valid ones.
package struct PayloadVerifier: Sendable {
    package enum Verdict: String, Sendable, Hashable, Codable, CaseIterable {
        case ok, duplicate, outOfOrder, corrupted
    }

    /// Counts over every message given to ``classify(_:timestamp:)``.
    package struct Counts: Sendable, Hashable, Codable {
        package var received = 0
        package var bytes = 0
        package var ok = 0
        package var duplicates = 0
        package var outOfOrder = 0
        package var corrupted = 0

        package init() {}

        /// Distinct valid messages: ok plus out of order.
        package var valid: Int { ok + outOfOrder }
    }

    package private(set) var counts = Counts()
    /// Per sender seed (a handful): the highest sequence number seen and a bitmap of those seen,
    /// so that checking a message costs a bit test rather than hashing into a set.
    private var senders: [SenderTrack] = []
    /// Messages a bitmap does not cover (a sender numbering far ahead of what it sent, or past
    /// the first ``maxTrackedSenders``), kept as a set: memory stays proportional to messages.
    private var untracked: Set<UInt64> = []
    /// The highest sequence number of each sender past the first ``maxTrackedSenders``.
    private var untrackedHighest: [UInt32: UInt32] = [:]

    /// Senders (seeds) tracked with a bitmap each; messages of any further ones go to a set.
    package static let maxTrackedSenders = 64

    private struct SenderTrack {
        let seed: UInt32
        var highest: UInt32?
        var seen: [UInt64] = []
        var received = 0

        /// A bitmap covers sequence numbers up to about twice what the sender delivered.
        func covers(_ sequence: UInt32) -> Bool { Int(sequence) < 2 * received + 65_536 }

        /// Marks `sequence` seen; false if it already was.
        mutating func insert(_ sequence: UInt32) -> Bool {
            let word = Int(sequence >> 6)
            let bit = UInt64(1) << UInt64(sequence & 63)
            if word >= seen.count { seen.append(contentsOf: repeatElement(0, count: max(word + 1 - seen.count, seen.count))) }
            guard seen[word] & bit == 0 else { return false }
            seen[word] |= bit
            return true
        }
    }

    package init() {}

    /// Marks a message seen; false if it already was.
    private mutating func insert(seed: UInt32, sequence: UInt32, timestamp: UInt64) -> (isNew: Bool, sender: Int?) {
        let sender: Int
        if let index = senders.firstIndex(where: { $0.seed == seed }) {
            sender = index
        } else if senders.count < Self.maxTrackedSenders {
            senders.append(SenderTrack(seed: seed))
            sender = senders.count - 1
        } else {
            return (untracked.insert(timestamp).inserted, nil)
        }
        senders[sender].received += 1
        guard senders[sender].covers(sequence) else { return (untracked.insert(timestamp).inserted, sender) }
        // One first seen while the bitmap did not reach it is in the set.
        let isNew = senders[sender].insert(sequence) && (untracked.isEmpty || !untracked.contains(timestamp))
        return (isNew, sender)
    }

    package mutating func classify(_ bytes: [UInt8], timestamp: UInt64) -> Verdict {
        counts.received += 1
        counts.bytes += bytes.count
        guard SeededPayload.matches(bytes, timestamp: timestamp) else {
            counts.corrupted += 1
            return .corrupted
        }
        let (seed, seq) = SeededPayload.decode(timestamp: timestamp)
        let (isNew, sender) = insert(seed: seed, sequence: seq, timestamp: timestamp)
        guard isNew else {
            counts.duplicates += 1
            return .duplicate
        }
        guard let sender else {
            if let top = untrackedHighest[seed], seq < top {
                counts.outOfOrder += 1
                return .outOfOrder
            }
            untrackedHighest[seed] = seq
            counts.ok += 1
            return .ok
        }
        if let top = senders[sender].highest, seq < top {
            counts.outOfOrder += 1
            return .outOfOrder
        }
        senders[sender].highest = seq
        counts.ok += 1
        return .ok
    }
}
