/// A call already has the whole contract (`deadlines(now:)` gives transmit and timeout apart).
extension CallMachine: SansIOMachine {
    public typealias Event = CallEvent
}
