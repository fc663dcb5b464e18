import ConduitCore

/// What the bench needs to know of one synthetic member from outside its reader task: its member
/// number once joined, how many others it has heard of, and why its link ended (refused,
/// disconnected). Written by the reader on control frames only (rare), so a lock is cheap here.
package final class SyntheticMemberStatus: Sendable {
    private struct State {
        var member: UInt16?
        var othersKnown = 0
        var ended: String?
    }

    private let state = TSanVisibleMutex(State())

    package init() {}

    package var member: UInt16? { state.withLock { $0.member } }
    package var othersKnown: Int { state.withLock { $0.othersKnown } }
    package var ended: String? { state.withLock { $0.ended } }

    func joined(as member: UInt16) { state.withLock { $0.member = member } }
    func know(others: Int) { state.withLock { $0.othersKnown = others } }
    func end(_ reason: String) { state.withLock { $0.ended = $0.ended ?? reason } }
}
