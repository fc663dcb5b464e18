public import ConduitCore

/// One timer on a ``ConduitClock``, armed for the earliest deadline asked of it: what every
/// driver keeps instead of a periodic tick. Held in an actor's state; the firing comes back
/// through `fire` with a generation, which ``claim(_:)`` checks so that a firing that raced with
/// a re-arm or a cancel is ignored.
public struct DeadlineTimer: Sendable {
    /// When the armed timer fires, or nil when it is not armed.
    public private(set) var deadline: ConduitInstant?
    private var task: Task<Void, Never>?
    private var generation: UInt64 = 0

    /// An unarmed timer.
    public init() {}

    /// Arms the timer for `deadline` unless it is already armed for that time or earlier (firing
    /// early is harmless: the owner re-arms for what is then due). `fire` is called with the
    /// generation to pass to ``claim(_:)``.
    public mutating func arm(at deadline: ConduitInstant, on clock: any ConduitClock, fire: @escaping @Sendable (UInt64) async -> Void) {
        if let armed = self.deadline, armed <= deadline { return }
        task?.cancel()
        generation &+= 1
        let generation = generation
        self.deadline = deadline
        task = Task {
            do { try await clock.sleep(until: deadline) } catch { return }
            await fire(generation)
        }
    }

    /// Whether a firing with `generation` is the armed timer's; if it is, the timer is now unarmed.
    public mutating func claim(_ generation: UInt64) -> Bool {
        guard generation == self.generation, deadline != nil else { return false }
        deadline = nil
        task = nil
        return true
    }

    /// Disarms the timer; a firing already under way is refused by ``claim(_:)``.
    public mutating func cancel() {
        task?.cancel()
        task = nil
        deadline = nil
        generation &+= 1
    }
}
