/// Records the roster's stream no longer needs: a room's, up to the one that left it empty. Every
/// relay that applied them dropped that room's log (an emptied room starts again at number 1 and
/// version 1), so a relay that starts later and never reads them ends in the same state; without
/// this, the stream would keep every join and leave ever made, and a relay started later would
/// replay them all. Removing them leaves holes in the stream's sequence, which a relay tells from
/// lost records by the consumer's own count (``RelayMachine/handleRoster(_:sequence:delivered:now:)-([UInt8],_,_,_)``).
///
/// The relay that appended the record that emptied the room asks for it (every relay, for a
/// `nodeGone`: its writer may be any, and asking twice removes nothing more), after
/// ``RelayClusterLiveness/rosterCompactionDelay``, so that no relay still reading them finds some
/// gone. A request that fails (or that a relay shut down before making) is not retried: the
/// room's next emptying removes everything before it.
public struct RelayRosterPurge: Hashable, Sendable {
    /// The room's subject (``RelayRosterRecord/subject(ofRoom:)``).
    public let subject: String
    /// Records on `subject` before this stream sequence go (the emptying record's, plus one).
    public let before: UInt64

    /// The records on `subject` before the stream sequence `before`.
    public init(subject: String, before: UInt64) {
        self.subject = subject
        self.before = before
    }
}
