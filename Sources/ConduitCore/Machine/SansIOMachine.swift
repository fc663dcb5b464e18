/// The contract every sans-IO machine of the core follows, so one driver runs them all: bytes in
/// (``handle(batch:now:)``), bytes out into a batch the caller owns and reuses
/// (``pollTransmit(now:into:maxBytes:)``), events out (``pollEvent()``), and time passed in
/// (``deadlines(now:)``, ``handleTimeout(now:)``). The machine never reads a clock or touches a
/// socket; whoever drives it decides when `now` is.
public protocol SansIOMachine {
    /// What the machine reports to the layer above (a call's or a conference's events).
    associatedtype Event

    /// Takes a batch of datagrams read from the link at `now`.
    mutating func handle(batch: DatagramBatch, now: ConduitInstant)
    /// Appends what is ready to send at `now` to `batch`, up to about `maxBytes`; returns how many
    /// datagrams it appended.
    mutating func pollTransmit(now: ConduitInstant, into batch: inout DatagramBatch, maxBytes: Int) -> Int
    /// The next event, or nil when none is waiting.
    mutating func pollEvent() -> Event?
    /// When paced data may next be sent (`transmit`: the pump's business) and when
    /// ``handleTimeout(now:)`` must run whatever else happens (`timeout`: expiry, queue-delay
    /// checks, keepalives); nil where nothing is due. Kept apart because a driver blocked in a
    /// write must still honour `timeout` (that is when `tooLongQueuedData` matters), while
    /// `transmit` can wait for the write. `mutating` only so a driver reaches the machine in place.
    mutating func deadlines(now: ConduitInstant) -> (transmit: ConduitInstant?, timeout: ConduitInstant?)
    /// Lets time pass: runs whatever is due at `now`.
    mutating func handleTimeout(now: ConduitInstant)
    /// The link under the machine ended (read nil, or writing failed for good).
    mutating func linkClosed()
    /// Whether the machine has ended: its driver closes the link once what is queued is out.
    var isEnded: Bool { get }
    /// Whether the last enqueue made a new queue head, whose queue-delay deadline a driver blocked
    /// in a write must arm now (and clears it). Machines that do not track it answer true, which
    /// costs the driver one ``deadlines(now:)`` walk per send.
    mutating func takeQueueHeadAdded() -> Bool
}

extension SansIOMachine {
    public mutating func takeQueueHeadAdded() -> Bool { true }
}
