import ConduitCore

/// The packet numbers received from the peer, as disjoint ascending ranges: what ACK frames
/// report (RFC 9000 section 13.2.3) and how duplicated datagrams are recognised.
///
/// At most `capacity` ranges are kept; when a new gap would exceed that, the oldest range is
/// forgotten (section 13.2.4 lets a receiver limit the ranges it reports). A late packet below
/// what is remembered is then processed again, which is harmless: every frame is de-duplicated by
/// its channel and sequence.
struct LinkReceivedPackets: Sendable, Hashable {
    private(set) var ranges: [ClosedRange<UInt64>] = []
    let capacity: Int
    private(set) var forgottenRanges = 0

    init(capacity: Int) {
        precondition(capacity >= 1)
        self.capacity = capacity
        ranges.reserveCapacity(capacity + 1)
    }

    var isEmpty: Bool { ranges.isEmpty }
    var largest: UInt64? { ranges.last?.upperBound }

    func contains(_ number: UInt64) -> Bool {
        // Most lookups are near the top.
        guard let last = ranges.last, number <= last.upperBound else { return false }
        var low = 0
        var high = ranges.count
        while low < high {
            let mid = (low + high) / 2
            if ranges[mid].upperBound < number { low = mid + 1 } else { high = mid }
        }
        return low < ranges.count && ranges[low].contains(number)
    }

    /// Records `number`; false if it was already there.
    @discardableResult
    mutating func insert(_ number: UInt64) -> Bool {
        if let last = ranges.last {
            if number == last.upperBound + 1 {
                ranges[ranges.count - 1] = last.lowerBound...number
                return true
            }
            if number > last.upperBound + 1 {
                ranges.append(number...number)
                trim()
                return true
            }
        } else {
            ranges.append(number...number)
            return true
        }
        // Below the top: find the first range whose upper bound is >= number - 1.
        var low = 0
        var high = ranges.count
        while low < high {
            let mid = (low + high) / 2
            if ranges[mid].upperBound < number { low = mid + 1 } else { high = mid }
        }
        if low < ranges.count, ranges[low].contains(number) { return false }
        let joinsBelow = low > 0 && ranges[low - 1].upperBound + 1 == number
        let joinsAbove = low < ranges.count && number + 1 == ranges[low].lowerBound
        switch (joinsBelow, joinsAbove) {
        case (true, true):
            ranges[low - 1] = ranges[low - 1].lowerBound...ranges[low].upperBound
            ranges.remove(at: low)
        case (true, false):
            ranges[low - 1] = ranges[low - 1].lowerBound...number
        case (false, true):
            ranges[low] = number...ranges[low].upperBound
        case (false, false):
            ranges.insert(number...number, at: low)
            trim()
        }
        return true
    }

    private mutating func trim() {
        while ranges.count > capacity {
            ranges.removeFirst()
            forgottenRanges += 1
        }
    }
}
