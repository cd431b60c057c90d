import PulseAudio

/// The sound server as the output watcher last saw it: whether it is connected, its sinks, the default sink, our
/// playback stream, and from those the output in use. A value type fed what libpulse reported, with no I/O of its
/// own (like ``OutputPolicy``): the watcher queries the server and tells the model the answers.
///
/// Sinks are told apart as the server does, by index: PipeWire lets two sinks have one name. The output in use is
/// the sink our stream plays to (the sink index of its sink input), else the default sink as the server resolved
/// it to a real sink (never a placeholder such as `@DEFAULT_SINK@`); none while disconnected. It is recomputed only
/// by ``settleCurrentOutput()``, so that a handler can compare what changed with the output in use before the
/// change (a removed sink that was the output in use is a loss).
///
/// ```swift
/// var server = SoundServerModel()
/// server.connect()
/// server.list([PulseSink(index: 1, name: "speakers"), PulseSink(index: 2, name: "headphones")])
/// server.setDefaultSink(PulseSink(index: 1, name: "speakers"))
/// server.findStream(PulseSinkInput(index: 7, sinkIndex: 2))
/// server.settleCurrentOutput()   // "headphones"
/// server.isInUse(2)              // true
/// ```
struct SoundServerModel: Sendable, Equatable {
    /// Whether the server is connected; everything below is empty while it isn't.
    private(set) var connected = false
    /// The server's sinks by index.
    private(set) var sinks: [UInt32: PulseSink] = [:]
    /// Whether `sinks` holds the server's list (false until it was read on connecting, or when reading it failed).
    private(set) var sinksListed = false
    /// The default sink, as the server resolved its name; nil when there is none or it is not known yet.
    private(set) var defaultSink: PulseSink?
    /// Our playback stream, if we have one.
    private(set) var stream: PulseSinkInput?
    /// The output in use as of the last ``settleCurrentOutput()``: its name ("" for none) and its index.
    private(set) var currentOutput = ""
    private(set) var currentIndex: UInt32?
    /// Set when the connection is lost, until ``takeReturn()`` after the next connection.
    private(set) var wasDisconnected = false

    // MARK: - The server

    /// The server answered; its sinks, default sink and our stream follow (``list(_:)``, ``setDefaultSink(_:)``,
    /// ``findStream(_:)``).
    mutating func connect() {
        connected = true
    }

    /// The server's sinks, as listed on connecting (the first of two with the same index).
    mutating func list(_ sinks: [PulseSink]) {
        self.sinks = Dictionary(sinks.map { ($0.index, $0) }, uniquingKeysWith: { first, _ in first })
        sinksListed = true
    }

    /// Our stream as found on connecting (nil: we have none).
    mutating func findStream(_ stream: PulseSinkInput?) {
        self.stream = stream
    }

    /// Whether this connection follows a lost one (once: it is then forgotten).
    mutating func takeReturn() -> Bool {
        defer { wasDisconnected = false }
        return wasDisconnected
    }

    /// The connection is lost: nothing is known of the server until it connects again.
    mutating func disconnect() {
        connected = false
        wasDisconnected = true
        sinks = [:]
        sinksListed = false
        stream = nil
        defaultSink = nil
    }

    /// The default sink changed: the sink the server resolved its default to (nil: none, or not resolved).
    mutating func setDefaultSink(_ sink: PulseSink?) {
        defaultSink = sink
    }

    // MARK: - Sinks and our stream

    /// A sink was removed, or found gone without its removal event (which may come later); returns it, or nil when
    /// it wasn't known. A removed default sink is forgotten until the server names the next one.
    @discardableResult
    mutating func removeSink(_ index: UInt32) -> PulseSink? {
        var gone = sinks.removeValue(forKey: index)
        if defaultSink?.index == index {
            gone = gone ?? defaultSink
            defaultSink = nil
        }
        return gone
    }

    /// A sink appeared or changed; returns what it was before, nil for a new sink.
    mutating func updateSink(_ sink: PulseSink) -> PulseSink? {
        if defaultSink?.index == sink.index { defaultSink = sink }
        return sinks.updateValue(sink, forKey: sink.index)
    }

    /// A stream was removed: if it was ours, we have none.
    mutating func removeStream(_ index: UInt32) -> Bool {
        guard stream?.index == index else { return false }
        stream = nil
        return true
    }

    /// Our stream appeared or changed; returns the sink it played to before, if known.
    mutating func updateStream(_ new: PulseSinkInput) -> PulseSink? {
        let before = stream.flatMap { sinks[$0.sinkIndex] }
        stream = new
        return before
    }

    // MARK: - The output in use

    /// The sink our stream plays to, if both are known.
    var streamSink: PulseSink? { stream.flatMap { sinks[$0.sinkIndex] } }

    /// The sink in use now: our stream's, else the default sink; nil while disconnected.
    var sinkInUse: PulseSink? { connected ? streamSink ?? defaultSink : nil }

    /// Whether the sink with this index was the output in use as of the last ``settleCurrentOutput()``.
    func isInUse(_ index: UInt32) -> Bool { currentIndex == index }

    /// Whether `output` is among the sinks; true when the sinks aren't known (listing them failed).
    func mayHaveSink(named output: String) -> Bool {
        !sinksListed || sinks.values.contains { $0.name == output }
    }

    /// Recomputes the output in use; returns its name when that changed, nil when it didn't.
    @discardableResult
    mutating func settleCurrentOutput() -> String? {
        let sink = sinkInUse
        currentIndex = sink?.index
        let name = sink?.name ?? ""
        guard name != currentOutput else { return nil }
        currentOutput = name
        return name
    }
}
