import Dispatch
import Foundation
import GStreamer
import LecternCore
import Logging
import Synchronization

/// The real ``AudioEngine``: one GStreamer playbin, audio only, gapless, pitch-preserving rate changes.
///
/// ```swift
/// let engine = try GStreamerEngine()                      // autoaudiosink
/// let player = Player(engine: engine)                      // passed with `sending`; the actor is the only caller
///
/// let background = GStreamerEngine.building(audioSink: nil)  // returns at once; GStreamer starts on another thread
/// let readiness = background.readiness
/// try await readiness.wait()                                // before the first command reaches the engine
/// ```
///
/// Threads: the player actor calls the methods (one caller, in order). The playbin's bus thread runs
/// `Translation.handle`, which turns ``PlaybinEvent``s into ``EngineEvent``s and yields them to ``events``; it also
/// finishes a load (the seek to the start position, then `.ready`) and stops the pipeline on errors of the current
/// stream or the output (not on the gapless next stream's: see ``EngineEvent/nextFailed(_:_:)``). Everything
/// both sides read or write is in `Translation.state`, behind one Mutex, and every pipeline call that depends on
/// that state is made while holding it, so the two threads act in a single order. The lock is never taken on a
/// GStreamer streaming thread ("about-to-finish" only touches the playbin's own next-URI slot).
///
/// A pipeline that hangs: GStreamer 1.22's playbin can deadlock inside a state change after a gapless next stream
/// failed (docs/benchmarks.md, Reliability), and whoever called set_state then waits for good. So every state
/// change and seek runs on a thread of its own, waited for at most ``hangLimit`` (``Guarded``). When one hangs the
/// engine gives that playbin up (kept, never released: releasing it would hang too; should the call return after
/// all, that thread sets it to NULL, so it can't play on unseen), builds a new one like it and reports
/// ``EngineEvent/outputFailed(_:)`` (the place is kept; Play loads the file again), or, in `load`, goes on loading
/// into the new one. No call waits for good: the player's thread waits at most a few times ``hangLimit`` (the lock
/// while the bus thread waits for a call, then its own calls), the bus thread at most once.
final class GStreamerEngine: AudioEngine {
    let events: AsyncStream<EngineEvent>
    /// Whether the playbin is built; see ``building(audioSink:)``.
    let readiness: PlaybinBuild
    /// How long a state change or a seek may take before the pipeline is given up as hung.
    let hangLimit: Duration

    private let translation: Translation
    private let audioSink: String?
    /// The playbin, once taken from `readiness` (the owner's first call); only the owner touches it.
    private var builtPlaybin: Playbin?
    /// Playbins given up because a call on them hung: never released (see the type's comment).
    private var abandoned: [Playbin] = []
    /// The last volume set, for a playbin built to replace a hung one.
    private var volume = 1.0
    private let logger = Logger(label: "lecternd.engine")

    /// How many playbins were given up as hung (and replaced) so far.
    var abandonedPipelines: Int { abandoned.count }

    /// - Parameter audioSink: a GStreamer pipeline description for the output (see ``Playbin/init(audioSink:onEvent:)``),
    ///   e.g. `"fakesink sync=true"` in tests; nil for the system's default output (autoaudiosink).
    /// - Parameter hangLimit: how long a state change or a seek may take before the pipeline is given up as hung.
    convenience init(audioSink: String? = nil, hangLimit: Duration = .seconds(2)) throws(PipelineError) {
        self.init(audioSink: audioSink, inBackground: false, hangLimit: hangLimit)
        if case .failure(let error) = readiness.result() { throw error }
    }

    /// An engine whose playbin is being built on a thread of its own (gst_init, the registry and plugin loading
    /// take tens of milliseconds at start-up). Await ``readiness`` before the first call: a call made earlier
    /// waits for the build, and a failed build (an invalid sink description) is a programming error then.
    static func building(audioSink: String?) -> GStreamerEngine {
        GStreamerEngine(audioSink: audioSink, inBackground: true, hangLimit: .seconds(2))
    }

    private init(audioSink: String?, inBackground: Bool, hangLimit: Duration) {
        let (stream, continuation) = AsyncStream.makeStream(of: EngineEvent.self)
        let translation = Translation(continuation: continuation, hangLimit: hangLimit)
        self.events = stream
        self.translation = translation
        self.audioSink = audioSink
        self.hangLimit = hangLimit
        self.readiness = PlaybinBuild(audioSink: audioSink, inBackground: inBackground) { event, control in
            translation.handle(event, control: control, generation: 0)
        }
    }

    private var playbin: Playbin {
        if let builtPlaybin { return builtPlaybin }
        switch readiness.result() {
        case .success(let playbin):
            builtPlaybin = playbin
            return playbin
        case .failure(let error):
            preconditionFailure("the engine was used although its playbin could not be built: \(error)")
        }
    }

    deinit {
        translation.continuation.finish()
        // A playbin given up as hung is never released, not even now: its deinit sets NULL, which would hang the
        // daemon's exit as it hung the call.
        for playbin in abandoned { _ = Unmanaged.passRetained(playbin) }
    }

    func load(_ url: URL, at position: Duration) {
        translation.state.withLock { state in
            // NULL (synchronous) drops the old stream; the bus is flushed too, so the old stream's messages are gone.
            // A pipeline that hangs on it is replaced, and the file loads into the new one.
            if !change(.null) {
                replacePlaybin(&state, because: "going to NULL to load \(url.path) hung")
            }
            playbin.uri = url.absoluteString
            state.loadedURL = url
            state.phase = .loading(sawReset: false)
            state.startPosition = max(position, .zero)
            state.wantsPlaying = false
            state.sawStreamStart = false
            state.takenNext = nil
            state.failedNext = nil
            state.lastDuration = nil
            state.seekTarget = nil
            if !change(.paused) {
                replacePlaybin(&state, because: "going to PAUSED to load \(url.path) hung", report: true)
            }
        }
    }

    func play() {
        translation.state.withLock { state in
            state.wantsPlaying = true
            // Before `.ready`, the bus thread starts playback once prerolled at the start position: playing
            // earlier would let the first moments of the stream be heard before the seek.
            if state.phase == .ready, !change(.playing) {
                replacePlaybin(&state, because: "going to PLAYING hung", report: true)
            }
        }
    }

    func pause() {
        translation.state.withLock { state in
            state.wantsPlaying = false
            if state.phase == .ready, !change(.paused) {
                replacePlaybin(&state, because: "going to PAUSED hung", report: true)
            }
        }
    }

    func stop() {
        translation.state.withLock { state in
            if !change(.null) {
                replacePlaybin(&state, because: "going to NULL to stop hung")
            }
            state.phase = .idle
            state.wantsPlaying = false
            state.takenNext = nil
            state.failedNext = nil
        }
    }

    func seek(to position: Duration) {
        translation.state.withLock { state in
            switch state.phase {
            case .idle, .failed:
                break
            case .loading, .seekingToStart:
                // Applied by the bus thread once prerolled (see Translation.asyncDone).
                state.startPosition = max(position, .zero)
            case .ready:
                switch seek(to: position, rate: state.rate) {
                case true?: state.seekTarget = max(position, .zero)
                case false?: break
                case nil: replacePlaybin(&state, because: "a seek hung", report: true)
                }
            }
        }
    }

    var position: Duration? {
        translation.state.withLock { state in
            switch state.phase {
            case .idle, .failed: nil
            case .loading, .seekingToStart: state.startPosition
            // While a flushing seek is in flight the query fails: report where it is going.
            case .ready: state.seekTarget ?? playbin.position
            }
        }
    }

    func setVolume(_ volume: Double) {
        self.volume = volume
        playbin.volume = volume
    }

    func setRate(_ rate: Double) {
        guard rate > 0, rate.isFinite else { return }
        translation.state.withLock { state in
            state.rate = rate
            // Before `.ready` the start seek carries the rate.
            guard state.phase == .ready, let position = state.seekTarget ?? playbin.position else { return }
            switch seek(to: position, rate: rate) {
            case true?: state.seekTarget = position
            case false?: break
            case nil: replacePlaybin(&state, because: "a rate change hung", report: true)
            }
        }
    }

    func setNext(_ url: URL?) {
        translation.state.withLock { state in
            state.nextURL = url
            playbin.nextURI = url?.absoluteString
        }
    }

    // MARK: Hung pipelines

    /// A state change of the current playbin, waited for at most ``hangLimit``; false: it hangs (and should it
    /// return after all, the playbin, given up by then, goes to NULL).
    private func change(_ target: PipelineState) -> Bool {
        let control = playbin.control
        return Guarded.within(hangLimit, { control.setState(target) }, late: { _ in control.setState(.null) }) != nil
    }

    /// A seek of the current playbin, waited for at most ``hangLimit``; nil: it hangs (see ``change(_:)``).
    private func seek(to position: Duration, rate: Double) -> Bool? {
        let control = playbin.control
        return Guarded.within(hangLimit, { control.seek(to: position, rate: rate) }, late: { _ in control.setState(.null) })
    }

    /// Gives up the current playbin (a call on it hung, or the bus thread found one that did) and builds a new one
    /// like it, idle, with what the player set (volume, next URI) carried over. Its bus thread's events are the
    /// new generation's; the old one's are ignored from now on. `report`: the player hears of it as a failed
    /// output (the place is kept, Play loads the file again); otherwise the caller goes on with the new playbin.
    private func replacePlaybin(_ state: inout Translation.State, because reason: String, report: Bool = false) {
        let old = playbin
        state.phase = .idle
        state.wantsPlaying = false
        state.seekTarget = nil
        state.takenNext = nil
        state.failedNext = nil
        let generation = state.generation + 1
        let translation = translation
        do {
            let fresh = try Playbin(audioSink: audioSink) { event, control in
                translation.handle(event, control: control, generation: generation)
            }
            fresh.volume = volume
            fresh.nextURI = state.nextURL?.absoluteString
            state.generation = generation
            abandoned.append(old)
            builtPlaybin = fresh
            logger.error("GStreamer stopped responding; its pipeline is given up and replaced",
                         metadata: ["reason": "\(reason)", "given up": "\(abandoned.count)"])
        } catch {
            // The same description built the first one: not expected. The old playbin stays, idle; the next load
            // tries it again.
            logger.error("GStreamer stopped responding, and a new pipeline could not be built",
                         metadata: ["reason": "\(reason)", "error": "\(error)"])
        }
        if report {
            translation.continuation.yield(.outputFailed("GStreamer stopped responding (\(reason)); playback was reset"))
        }
    }
}

/// Runs a pipeline call that can block on a thread of its own, waiting for it at most a given time.
enum Guarded {
    /// The call's result, or nil when it has not returned within `limit` (its thread then stays blocked in it, and
    /// returns the result to no one if it ever comes back). One short-lived thread per call: state changes and
    /// seeks are made a few times per file or user action.
    /// `late` runs on the call's thread with its result if the call returns after the caller stopped waiting.
    static func within<T: Sendable>(_ limit: Duration, _ call: @escaping @Sendable () -> T,
                                    late: @escaping @Sendable (T) -> Void) -> T? {
        let outcome = Outcome<T>()
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            let result = call()
            let abandoned = outcome.state.withLock { state in
                if state.gaveUp { return true }
                state.result = result
                return false
            }
            if abandoned { late(result) } else { done.signal() }
        }
        thread.name = "gst call"
        thread.start()
        let (seconds, attoseconds) = limit.components
        let timeout = DispatchTime.now() + .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
        _ = done.wait(timeout: timeout)
        // Decided under the lock: a result stored by now is taken (even if it came as the wait timed out);
        // otherwise the call is given up, and its thread runs `late` when (if) it returns.
        return outcome.state.withLock { state in
            if state.result == nil { state.gaveUp = true }
            return state.result
        }
    }

    private final class Outcome<T: Sendable>: Sendable {
        struct State {
            var result: T?
            var gaveUp = false
        }
        let state = Mutex(State())
    }
}

/// The engine's playbin, built once, on the calling thread or on a thread of its own.
// @unchecked Sendable: `built` is written once, by the building thread, before `finished` is signalled and the
// waiters are resumed, and read only after that; the Playbin in it is handed over to the engine's owner, its only
// user from then on.
final class PlaybinBuild: @unchecked Sendable {
    private var built: Result<Playbin, PipelineError>?
    private let finished = DispatchSemaphore(value: 0)
    /// Tasks awaiting the build; nil once it is done.
    private let waiters = Mutex<[CheckedContinuation<Void, Never>]?>([])

    fileprivate init(audioSink: String?, inBackground: Bool, onEvent: @escaping Playbin.EventHandler) {
        guard inBackground else {
            build(audioSink: audioSink, onEvent: onEvent)
            return
        }
        // A thread of its own, like the bus reader's: gst_init and plugin loading block for tens of milliseconds.
        let thread = Thread { [self] in build(audioSink: audioSink, onEvent: onEvent) }
        thread.name = "gst engine build"
        thread.start()
    }

    private func build(audioSink: String?, onEvent: @escaping Playbin.EventHandler) {
        do throws(PipelineError) {
            built = .success(try Playbin(audioSink: audioSink, onEvent: onEvent))
        } catch {
            built = .failure(error)
        }
        finished.signal()
        let waiting = waiters.withLock { waiting in
            defer { waiting = nil }
            return waiting ?? []
        }
        for waiter in waiting { waiter.resume() }
    }

    /// Returns when the playbin is built; throws why it could not be (e.g. an invalid sink description).
    func wait() async throws(PipelineError) {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let done = waiters.withLock { waiting in
                waiting?.append(waiter)
                return waiting == nil
            }
            if done { waiter.resume() }
        }
        if case .failure(let error) = built { throw error }
    }

    /// The outcome, waiting for the build if it is still running (only the engine's owner calls this).
    fileprivate func result() -> Result<Playbin, PipelineError> {
        finished.wait()
        finished.signal()  // for whoever waits next
        guard let built else { preconditionFailure("the playbin build signalled without a result") }
        return built
    }
}

/// The engine state shared with the bus thread, and the translation of playbin events.
private final class Translation: Sendable {
    enum Phase: Equatable {
        /// Nothing loaded (initially and after `stop()`).
        case idle
        /// `load` set the pipeline to PAUSED; waiting for NULL→READY (proof that later messages are this
        /// stream's, not stale ones popped before the flush), then for the first async-done.
        case loading(sawReset: Bool)
        /// Prerolled; the seek to the start position (and rate) is in flight. `target` is where it goes.
        case seekingToStart(target: Duration)
        /// `.ready` was reported; the player's calls act on the pipeline directly.
        case ready
        /// `.failed` was reported; the pipeline is NULL until the next `load`.
        case failed
    }

    struct State {
        var phase = Phase.idle
        /// Where the loaded stream should start; the latest `seek` before `.ready` overrides it.
        var startPosition = Duration.zero
        /// The rate the player asked for; a new stream starts at 1, so it is applied again after load and advance.
        var rate = 1.0
        /// Whether the player asked for playback (applied when the load completes).
        var wantsPlaying = false
        /// The last URL given to `setNext` (to report `.advanced` with the caller's own URL value).
        var nextURL: URL?
        /// The URL "about-to-finish" took: the next STREAM_START is that stream.
        var takenNext: URL?
        /// The first STREAM_START after a load is the loaded stream's own.
        var sawStreamStart = false
        var lastDuration: Duration?
        /// The URL of the last `load`, named in `.ready` so the player can tell a stale one.
        var loadedURL: URL?
        /// Where a seek made after `.ready` goes, until its async-done (the position query fails meanwhile).
        var seekTarget: Duration?
        /// The next stream that failed while the current one plays on: its later errors are already reported.
        var failedNext: URL?
        /// Which playbin is current: its bus thread's events carry the number it was built with; the events of a
        /// playbin given up as hung are ignored.
        var generation = 0
    }

    /// Guards all engine state; see GStreamerEngine's comment for the locking rule.
    let state = Mutex(State())
    let continuation: AsyncStream<EngineEvent>.Continuation
    /// How long a call the bus thread makes may take before the playbin counts as hung.
    let hangLimit: Duration

    init(continuation: AsyncStream<EngineEvent>.Continuation, hangLimit: Duration) {
        self.continuation = continuation
        self.hangLimit = hangLimit
    }

    /// On the bus thread of the playbin built as `generation`: updates the state, makes the calls that finish a
    /// load, and yields engine events (only bus threads yield, but for a replaced playbin's report, so they keep
    /// the bus order).
    func handle(_ event: PlaybinEvent, control: PlaybinControl, generation: Int) {
        let output: [EngineEvent] = state.withLock { state in
            var output: [EngineEvent] = []
            guard generation == state.generation else { return output }  // a playbin given up as hung
            let active: Bool = switch state.phase {
            case .loading(sawReset: true), .seekingToStart, .ready: true
            case .idle, .failed, .loading(sawReset: false): false
            }
            switch event {
            case .stateChanged(old: .null, new: .ready):
                if state.phase == .loading(sawReset: false) {
                    state.phase = .loading(sawReset: true)
                }
            case .asyncDone where state.phase == .ready:
                state.seekTarget = nil
            case .asyncDone where active:
                asyncDone(&state, control: control, output: &output)
            case .aboutToFinish(let uri?) where active:
                if let next = state.nextURL, next.absoluteString == uri {
                    state.takenNext = next
                    state.nextURL = nil
                } else {
                    // setNext changed the slot again after the streaming thread took this one.
                    state.takenNext = URL(string: uri)
                }
            case .streamStart where active:
                guard state.sawStreamStart else {
                    state.sawStreamStart = true
                    break
                }
                guard let next = state.takenNext else { break }
                state.takenNext = nil
                output.append(.advanced(next))
                if state.rate != 1 {
                    // A new stream starts at rate 1: re-apply the speed from its start.
                    switch guarded(&state, output: &output, control: control, { control.seek(to: .zero, rate: $0) }) {
                    case true?: state.seekTarget = .zero
                    case false?, nil: break
                    }
                }
                if let duration = control.duration {
                    state.lastDuration = duration
                    output.append(.durationChanged(duration))
                }
            case .durationChanged(let duration?) where state.phase == .ready:
                if duration != state.lastDuration {
                    state.lastDuration = duration
                    output.append(.durationChanged(duration))
                }
            case .endOfStream where active:
                output.append(.endOfStream)
            case .error(let message, _, let fromSink, let streamURI) where active:
                if !fromSink, let failed = state.failedNext, let streamURI, Self.names(failed, streamURI) {
                    break  // more of the failed next stream's errors (a demuxer posts two or three)
                }
                // The stream about-to-finish handed over failed before it started (typically "Could not determine
                // type of stream" from its decodebin). Told apart from the current stream's own late failure (a
                // truncated file's demuxer, after its source was read to the end) by the failing element. The
                // current stream plays on: see EngineEvent.nextFailed for why the pipeline is not stopped here.
                if !fromSink, let next = state.takenNext, streamURI.map({ Self.names(next, $0) }) ?? true {
                    state.takenNext = nil
                    state.failedNext = next
                    output.append(.nextFailed(next, message))
                    break
                }
                // Bounded: a NULL that hangs leaves the playbin to the player's next call, which gives it up.
                _ = Guarded.within(hangLimit, { control.setState(.null) }, late: { _ in })
                state.phase = .failed
                state.wantsPlaying = false
                state.takenNext = nil
                state.failedNext = nil
                output.append(fromSink ? .outputFailed(message) : .failed(message))
            default:
                break
            }
            return output
        }
        for event in output {
            continuation.yield(event)
        }
    }

    /// Whether `uri` (from GStreamer: the string playbin was given, or a source element's own spelling of it)
    /// names `url`.
    static func names(_ url: URL, _ uri: String) -> Bool {
        guard uri != url.absoluteString else { return true }
        guard let other = URL(string: uri), other.isFileURL, url.isFileURL else { return false }
        return other.standardizedFileURL.path == url.standardizedFileURL.path
    }

    /// Async-done while loading: seek to the start position once, then report `.ready` after that seek's own
    /// async-done (seeking again if the player moved the start position meanwhile).
    private func asyncDone(_ state: inout State, control: PlaybinControl, output: inout [EngineEvent]) {
        let seekNeeded: Bool
        switch state.phase {
        case .loading: seekNeeded = state.startPosition > .zero || state.rate != 1
        case .seekingToStart(let target): seekNeeded = state.startPosition != target
        case .idle, .ready, .failed: return
        }
        if seekNeeded {
            let start = state.startPosition
            switch guarded(&state, output: &output, control: control, { control.seek(to: start, rate: $0) }) {
            case true?:
                state.phase = .seekingToStart(target: start)
                return
            case false?: break  // refused: ready where it is
            case nil: return    // hung: failed (see guarded)
            }
        }
        state.phase = .ready
        let duration = control.duration
        state.lastDuration = duration
        if let url = state.loadedURL { output.append(.ready(url, duration: duration)) }
        if state.wantsPlaying {
            _ = guarded(&state, output: &output, control: control) { _ in control.setState(.playing) }
        }
    }

    /// A call the bus thread makes on the pipeline (given the rate the player asked for), waited for at most
    /// ``hangLimit``. nil: it hangs; the engine is then failed as if the output had (the place is kept; should the
    /// call return after all, the pipeline goes to NULL, so that it can't play on unseen), and the player's next
    /// call, trying NULL again, gives the playbin up if it still hangs.
    private func guarded<T: Sendable>(_ state: inout State, output: inout [EngineEvent], control: PlaybinControl,
                                      _ call: @escaping @Sendable (Double) -> T) -> T? {
        let rate = state.rate
        if let result = Guarded.within(hangLimit, { call(rate) }, late: { _ in control.setState(.null) }) {
            return result
        }
        state.phase = .failed
        state.wantsPlaying = false
        output.append(.outputFailed("GStreamer stopped responding (a call on the bus thread hung); playback was reset"))
        return nil
    }
}
