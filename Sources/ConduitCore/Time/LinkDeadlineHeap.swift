/// A binary min-heap of (deadline, frame handle): when the next frame lifetime runs out. Entries
/// for frames resolved meanwhile are skipped when they surface (lazy deletion).
package struct LinkDeadlineHeap: Sendable {
    private var items: [(deadline: ConduitInstant, handle: UInt64)] = []

    package init() {}

    package var isEmpty: Bool { items.isEmpty }
    package var count: Int { items.count }
    package var first: (deadline: ConduitInstant, handle: UInt64)? { items.first }

    package mutating func push(_ deadline: ConduitInstant, _ handle: UInt64) {
        items.append((deadline, handle))
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard items[child].deadline < items[parent].deadline else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    package mutating func popFirst() -> (deadline: ConduitInstant, handle: UInt64)? {
        guard !items.isEmpty else { return nil }
        items.swapAt(0, items.count - 1)
        let top = items.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < items.count, items[left].deadline < items[smallest].deadline { smallest = left }
            if right < items.count, items[right].deadline < items[smallest].deadline { smallest = right }
            if smallest == parent { break }
            items.swapAt(parent, smallest)
            parent = smallest
        }
        return top
    }
}
