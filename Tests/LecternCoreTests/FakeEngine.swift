import Foundation
import Synchronization
import LecternCore

/// A scriptable ``AudioEngine`` on a manual clock.
///
/// Records every call in order, keeps a position that only moves when the test calls
/// ``advance(by:)`` while "playing" (position += elapsed × rate), and lets the test emit
/// ``EngineEvent``s. All mutable state is behind a `Mutex`, so the test can keep a reference
/// after handing the engine to the player with `sending`.
final class FakeEngine: AudioEngine, Sendable {
    enum Call: Equatable, Sendable, CustomStringConvertible {
        case load(URL, at: Duration)
        case play
        case pause
        case stop
        case seek(Duration)
        case setVolume(Double)
        case setGain(Double)
        case setCompressor(Double?)
        case setSkipSilence(SkipSilence?)
        case setRate(Double)
        case setNext(URL?)

        var description: String {
            switch self {
            case .load(let url, let position): return "load(\(url.lastPathComponent), at: \(position))"
            case .play: return "play"
            case .pause: return "pause"
            case .stop: return "stop"
            case .seek(let position): return "seek(\(position))"
            case .setVolume(let volume): return "setVolume(\(volume))"
            case .setGain(let gain): return "setGain(\(gain))"
            case .setCompressor(let level): return "setCompressor(\(level.map { "\($0)" } ?? "off"))"
            case .setSkipSilence(let skipping):
                return "setSkipSilence(\(skipping.map { "\($0.threshold), \($0.amount)" } ?? "off"))"
            case .setRate(let rate): return "setRate(\(rate))"
            case .setNext(let url): return "setNext(\(url?.lastPathComponent ?? "nil"))"
            }
        }
    }

    private struct State {
        var calls: [Call] = []
        var current: URL?
        var next: URL?
        var position: Duration = .zero
        var playing = false
        var rate = 1.0
        var volume = 1.0
        var silenceRemoved = Duration.zero
    }

    private let state = Mutex(State())
    let events: AsyncStream<EngineEvent>
    private let continuation: AsyncStream<EngineEvent>.Continuation

    init() {
        (events, continuation) = AsyncStream.makeStream(of: EngineEvent.self)
    }

    deinit { continuation.finish() }

    // MARK: AudioEngine

    func load(_ url: URL, at position: Duration) {
        state.withLock {
            $0.calls.append(.load(url, at: position))
            $0.current = url
            $0.position = position
            $0.playing = false
        }
    }

    func play() {
        state.withLock {
            $0.calls.append(.play)
            if $0.current != nil { $0.playing = true }
        }
    }

    func pause() {
        state.withLock {
            $0.calls.append(.pause)
            $0.playing = false
        }
    }

    func stop() {
        state.withLock {
            $0.calls.append(.stop)
            $0.current = nil
            $0.next = nil
            $0.playing = false
            $0.position = .zero
        }
    }

    func seek(to position: Duration) {
        state.withLock {
            $0.calls.append(.seek(position))
            if $0.current != nil { $0.position = position }
        }
    }

    var position: Duration? {
        state.withLock { $0.current == nil ? nil : $0.position }
    }

    var silenceRemoved: Duration {
        get { state.withLock { $0.silenceRemoved } }
        set { state.withLock { $0.silenceRemoved = newValue } }
    }

    func setVolume(_ volume: Double) {
        state.withLock {
            $0.calls.append(.setVolume(volume))
            $0.volume = volume
        }
    }

    func setGain(_ gain: Double) {
        state.withLock { $0.calls.append(.setGain(gain)) }
    }

    func setCompressor(_ level: Double?) {
        state.withLock { $0.calls.append(.setCompressor(level)) }
    }

    func setSkipSilence(_ skipping: SkipSilence?) {
        state.withLock { $0.calls.append(.setSkipSilence(skipping)) }
    }

    func setRate(_ rate: Double) {
        state.withLock {
            $0.calls.append(.setRate(rate))
            $0.rate = rate
        }
    }

    func setNext(_ url: URL?) {
        state.withLock {
            $0.calls.append(.setNext(url))
            $0.next = url
        }
    }

    // MARK: Test control

    /// Every call the player made, in order.
    var calls: [Call] { state.withLock { $0.calls } }
    func clearCalls() { state.withLock { $0.calls.removeAll() } }

    var currentURL: URL? { state.withLock { $0.current } }
    var nextURL: URL? { state.withLock { $0.next } }
    var isPlaying: Bool { state.withLock { $0.playing } }
    var rate: Double { state.withLock { $0.rate } }
    var volume: Double { state.withLock { $0.volume } }

    /// The manual clock: `elapsed` of wall time passes; the position moves only while playing.
    func advance(by elapsed: Duration) {
        state.withLock {
            if $0.playing { $0.position += elapsed * $0.rate }
        }
    }

    /// The engine says it plays at `position` from now on: an output that stopped to fill its buffer, or a sink
    /// still answering from before a seek.
    func answer(_ position: Duration) {
        state.withLock { $0.position = position }
    }

    /// Skip silence shortens a pause as it is heard: `removed` of listening time is dropped, so the position jumps
    /// ahead by that much of the file (at the rate), and the total removed grows.
    func skipSilence(removing removed: Duration) {
        removeSilence(removed)
        hearSkippedSilence(removed)
    }

    /// Skip silence drops `removed` of listening time ahead of what is heard (a sink that renders ahead): the total
    /// grows, the position does not move yet.
    func removeSilence(_ removed: Duration) {
        state.withLock { $0.silenceRemoved += removed }
    }

    /// The splice of `removed` is heard: the position jumps ahead by that much of the file (at the rate).
    func hearSkippedSilence(_ removed: Duration) {
        state.withLock { if $0.playing { $0.position += removed * $0.rate } }
    }

    /// Delivers `event` to the player (through ``events``).
    func emit(_ event: EngineEvent) {
        continuation.yield(event)
    }

    /// The current stream ends: continues with the `setNext` stream (emitting `.advanced`) if there is
    /// one, else stops and emits `.endOfStream`. Returns the event emitted.
    @discardableResult
    func finish() -> EngineEvent {
        let event = finishWithoutEmitting()
        emit(event)
        return event
    }

    /// Like `finish()`, but returns the event instead of delivering it.
    func finishWithoutEmitting() -> EngineEvent {
        state.withLock {
            if let next = $0.next {
                $0.current = next
                $0.next = nil
                $0.position = .zero
                return .advanced(next)
            } else {
                $0.playing = false
                return .endOfStream
            }
        }
    }
}
