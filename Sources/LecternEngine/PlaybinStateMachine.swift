import Foundation
import GStreamer
import LecternCore

/// What the engine knows of its playbin, and what it decides: the player's commands and the playbin's bus events
/// go in, and out come the pipeline calls to make (in order) and the ``EngineEvent``s to report. It makes no call
/// itself and waits for nothing, so it is a value that tests drive with plain events.
///
/// ```swift
/// var machine = PlaybinStateMachine()
/// let effects = machine.load(url, at: .seconds(30))     // calls: [.load(url, number: 1)]
/// _ = machine.loadStarted(1)                            // the worker made NULL: later messages are this load's
/// _ = machine.handle(.stateChanged(old: .null, new: .ready), pipeline: control)
/// _ = machine.handle(.asyncDone, pipeline: control)     // prerolled: calls [.seek(30 s, ...)]
/// ```
///
/// A load goes through `loading` (waiting for the NULL→READY that proves later messages are this stream's, then
/// for the preroll's async-done), `seekingToStart` (the seek to the start position and rate), then `ready`, where
/// the player's calls act on the pipeline directly. GStreamerEngine holds it behind its lock.
struct PlaybinStateMachine {
    enum Phase: Equatable {
        /// Nothing loaded (initially, after `stop()`, and after a hung pipeline was replaced).
        case idle
        /// Loading; `sawReset` once the NULL→READY of this load was seen.
        case loading(sawReset: Bool)
        /// Prerolled; the seek to the start position (and rate) is in flight. `target` is where it goes.
        case seekingToStart(target: Duration)
        /// `.ready` was reported; the player's calls act on the pipeline directly.
        case ready
        /// `.failed` or `.outputFailed` was reported; the pipeline is NULL until the next `load`.
        case failed
    }

    /// A call on the pipeline, made by its worker thread in the order decided.
    enum Call: Equatable, Sendable {
        /// NULL (dropping the old stream and flushing the bus), then, if `number` is still the latest load, the
        /// URI and PAUSED. The worker reports the NULL with ``loadStarted(_:)``.
        case load(URL, number: Int)
        case setState(PipelineState)
        /// A flushing, accurate seek; the worker reports the outcome with ``seekDone(_:accepted:pipeline:)``. A
        /// move is marked on the bus first (``PlaybinControl/markSeek(_:)``).
        case seek(Duration, rate: Double, purpose: SeekPurpose)
        case setNext(URL?)
        /// The player's volume, loudness gain, speech compressor and skip silence, for the playbin's volume (up to 1)
        /// and its audio filter.
        case setSound(Sound)
    }

    /// What the player set of how the sound is shaped.
    struct Sound: Equatable, Sendable {
        var volume = 1.0
        var gain = 1.0
        /// The level in dBFS the speech compressor leaves unchanged; nil: off.
        var compressor: Double?
        var skipSilence: SkipSilence?
    }

    enum SeekPurpose: Equatable, Sendable {
        /// A seek of the player's (or a rate change), numbered: only the latest one's outcome counts.
        case move(Int)
        /// The seek to where load `number` starts.
        case start(load: Int)
    }

    /// What a step decided: calls for the worker, events for the player, both in order.
    struct Effects: Equatable {
        var calls: [Call] = []
        var events: [EngineEvent] = []
    }

    private(set) var phase = Phase.idle
    /// Where the loaded stream should start; the latest `seek` before `.ready` overrides it.
    private(set) var startPosition = Duration.zero
    /// The rate the player asked for; a loaded stream starts at 1, so the seek to the start position applies it. The
    /// playbin gives it to the next stream of the gapless handover itself, without a seek (speed.c).
    private(set) var rate = 1.0
    /// The last sound and next URL the player set, for a playbin built to replace a hung one.
    private(set) var sound = Sound()
    private(set) var nextURL: URL?
    /// Whether the player asked for playback (applied when the load completes).
    private var wantsPlaying = false
    /// The URL "about-to-finish" took: the next STREAM_START is that stream.
    private var takenNext: URL?
    /// The next stream, whose STREAM_START came while the stream before it is still heard (an audio sink takes a
    /// stream's start up to its buffer ahead of its sound), and the group id of the stream heard then: `.advanced` waits
    /// until another one is heard (``heard(_:pipeline:)``).
    private var arriving: (url: URL, heard: UInt32)?
    /// The first STREAM_START after a load is the loaded stream's own.
    private var sawStreamStart = false
    private var lastDuration: Duration?
    /// The URL of the last `load`, named in `.ready` so the player can tell a stale one.
    private var loadedURL: URL?
    /// The number of the latest load (a stop counts too: it outdates a load still queued), and of the load whose
    /// NULL the worker has made: only from then on is a NULL→READY this load's.
    private var loadNumber = 0
    private var startedLoad = 0
    /// Where a seek made after `.ready` goes, until its async-done (the position query fails meanwhile).
    private var seekTarget: Duration?
    /// The number of the latest seek after `.ready`, and whether its mark was read on the bus: an async-done before
    /// the mark is an earlier operation's and leaves `seekTarget` alone; one after it is the seek's, or later.
    private var seekNumber = 0
    private var seekMarkSeen = true
    /// The next stream that failed while the current one plays on: its later errors are already reported.
    private var failedNext: URL?
    /// Whether the current load already went on in a new pipeline after a hang (it does so once).
    private var reloadedAfterHang = false

    // MARK: The player's commands

    mutating func load(_ url: URL, at position: Duration) -> Effects {
        loadNumber += 1
        loadedURL = url
        phase = .loading(sawReset: false)
        startPosition = max(position, .zero)
        wantsPlaying = false
        sawStreamStart = false
        takenNext = nil
        arriving = nil
        failedNext = nil
        lastDuration = nil
        seekTarget = nil
        reloadedAfterHang = false
        return Effects(calls: [.load(url, number: loadNumber)])
    }

    mutating func play() -> Effects {
        wantsPlaying = true
        // Before `.ready`, playback starts once prerolled at the start position: playing earlier would let the
        // first moments of the stream be heard before the seek.
        return Effects(calls: phase == .ready ? [.setState(.playing)] : [])
    }

    mutating func pause() -> Effects {
        wantsPlaying = false
        return Effects(calls: phase == .ready ? [.setState(.paused)] : [])
    }

    mutating func stop() -> Effects {
        loadNumber += 1
        phase = .idle
        wantsPlaying = false
        takenNext = nil
        arriving = nil
        failedNext = nil
        return Effects(calls: [.setState(.null)])
    }

    mutating func seek(to position: Duration) -> Effects {
        switch phase {
        case .idle, .failed:
            return Effects()
        case .loading, .seekingToStart:
            // Applied once prerolled (see `asyncDone`).
            startPosition = max(position, .zero)
            return Effects()
        case .ready:
            if handedOver { return reload(at: max(position, .zero)) }
            return Effects(calls: [move(to: max(position, .zero), rate: rate)])
        }
    }

    mutating func setRate(_ rate: Double, pipeline: some PipelineQueries) -> Effects {
        guard rate > 0, rate.isFinite else { return Effects() }
        self.rate = rate
        // Before `.ready` the start seek carries the rate.
        guard phase == .ready, let position = seekTarget ?? pipeline.position else { return Effects() }
        if handedOver { return reload(at: position) }
        return Effects(calls: [move(to: position, rate: rate)])
    }

    /// Whether the streaming thread has taken the next stream ("about-to-finish") while the current one still plays
    /// from the sink's queue. Playbin then sends a seek to the next stream's decoder: refused while it starts, else
    /// obeyed there, so that playing would go on in the next file. A move in the current stream loads it again.
    private var handedOver: Bool { takenNext != nil || arriving != nil || failedNext != nil }

    /// Whether the next stream's start reached the sinks while the stream before it is still heard: ``heard(_:pipeline:)``
    /// tells the player of it once it is heard.
    var awaitsNextStream: Bool { arriving != nil }

    /// The current stream loaded again at `position`, at the rate, playing if it was; the next stream the handover
    /// took goes back in the slot (its load ended the handover).
    private mutating func reload(at position: Duration) -> Effects {
        guard let url = loadedURL else { return Effects() }
        let playing = wantsPlaying
        let taken = arriving?.url ?? takenNext
        var effects = load(url, at: position)
        wantsPlaying = playing
        if nextURL == nil, let taken {
            nextURL = taken
            effects.calls.append(.setNext(taken))
        }
        return effects
    }

    mutating func setNext(_ url: URL?) -> Effects {
        nextURL = url
        return Effects(calls: [.setNext(url)])
    }

    mutating func setVolume(_ volume: Double) -> Effects { setSound { $0.volume = volume } }
    mutating func setGain(_ gain: Double) -> Effects { setSound { $0.gain = gain } }
    mutating func setCompressor(_ level: Double?) -> Effects { setSound { $0.compressor = level } }
    mutating func setSkipSilence(_ skipping: SkipSilence?) -> Effects { setSound { $0.skipSilence = skipping } }

    private mutating func setSound(_ change: (inout Sound) -> Void) -> Effects {
        change(&sound)
        return Effects(calls: [.setSound(sound)])
    }

    /// The position in the current stream: the start position while loading, a seek's target until it lands; nil
    /// while the next stream is heard before ``heard(_:pipeline:)`` told the player.
    func position(pipeline: some PipelineQueries) -> Duration? {
        switch phase {
        case .idle, .failed: return nil
        case .loading, .seekingToStart: return startPosition
        case .ready:
            if let seekTarget { return seekTarget }
            let heard = pipeline.heard
            if let arriving, heard.stream != arriving.heard { return nil }
            return heard.position
        }
    }

    /// What is heard now (`heard`, the pipeline's): once the stream heard is no longer the one heard when the next
    /// stream's start reached the sinks, the player is told that it plays the next file (`.advanced`). The engine
    /// calls it as the next stream is due, and at each position read.
    mutating func heard(_ heard: PlaybinControl.Heard, pipeline: some PipelineQueries) -> Effects {
        guard phase == .ready, let arriving, heard.stream != arriving.heard else { return Effects() }
        self.arriving = nil
        return advance(to: arriving.url, pipeline: pipeline)
    }

    /// The player plays `url`, the next file, from its start.
    private mutating func advance(to url: URL, pipeline: some PipelineQueries) -> Effects {
        var effects = Effects()
        loadedURL = url
        effects.events.append(.advanced(url))
        if let duration = pipeline.duration {
            lastDuration = duration
            effects.events.append(.durationChanged(duration))
        }
        return effects
    }

    private mutating func move(to position: Duration, rate: Double) -> Call {
        seekNumber += 1
        seekTarget = position
        seekMarkSeen = false
        return .seek(position, rate: rate, purpose: .move(seekNumber))
    }

    // MARK: What the worker reports

    /// The worker made the NULL of load `number`; false: a later load or stop outdated it, and the worker goes no
    /// further with it.
    mutating func loadStarted(_ number: Int) -> Bool {
        guard number == loadNumber else { return false }
        startedLoad = number
        return true
    }

    /// The worker made a seek; `accepted` is GStreamer's answer.
    mutating func seekDone(_ purpose: SeekPurpose, accepted: Bool, pipeline: some PipelineQueries) -> Effects {
        switch purpose {
        case .move(let number):
            if number == seekNumber, !accepted { seekTarget = nil }
            return Effects()
        case .start(let number):
            // Refused: ready where it is.
            guard !accepted, number == loadNumber, case .seekingToStart = phase else { return Effects() }
            return becomeReady(pipeline: pipeline)
        }
    }

    /// A call on the pipeline hung, and a new playbin, idle, replaced it. A load in progress goes on in the new
    /// one (once: should that hang too, it is reported); a stream that was ready is lost, and the player hears of
    /// it as a failed output (the place is kept, Play loads the file again).
    mutating func pipelineReplaced(because reason: String) -> Effects {
        seekTarget = nil
        seekMarkSeen = true
        takenNext = nil
        arriving = nil
        failedNext = nil
        switch phase {
        case .loading, .seekingToStart:
            if !reloadedAfterHang, let url = loadedURL {
                reloadedAfterHang = true
                loadNumber += 1
                phase = .loading(sawReset: false)
                sawStreamStart = false
                lastDuration = nil
                return Effects(calls: [.load(url, number: loadNumber)])
            }
        case .ready:
            break
        case .idle, .failed:
            return Effects()
        }
        phase = .idle
        wantsPlaying = false
        return Effects(events: [.outputFailed("GStreamer stopped responding (\(reason)); playback was reset")])
    }

    // MARK: Bus events

    /// One event of the playbin's bus, in bus order; `pipeline` answers queries on that playbin.
    mutating func handle(_ event: PlaybinEvent, pipeline: some PipelineQueries) -> Effects {
        let active: Bool = switch phase {
        case .loading(sawReset: true), .seekingToStart, .ready: true
        case .idle, .failed, .loading(sawReset: false): false
        }
        var effects = Effects()
        switch event {
        case .stateChanged(old: .null, new: .ready):
            if phase == .loading(sawReset: false), startedLoad == loadNumber {
                phase = .loading(sawReset: true)
            }
        case .asyncDone where phase == .ready:
            if seekMarkSeen { seekTarget = nil }
        case .seekMarked(let number) where phase == .ready:
            if number == seekNumber { seekMarkSeen = true }
        case .asyncDone where active:
            return asyncDone(pipeline: pipeline)
        case .aboutToFinish(let uri?) where active:
            if let next = nextURL, next.absoluteString == uri {
                takenNext = next
                nextURL = nil
            } else {
                // setNext changed the slot again after the streaming thread took this one.
                takenNext = URL(string: uri)
            }
        case .streamStart(let group) where active:
            guard sawStreamStart else {
                sawStreamStart = true
                break
            }
            if let arriving {
                // A stream after it started before it was heard (a file shorter than the sink's buffer).
                self.arriving = nil
                effects = advance(to: arriving.url, pipeline: pipeline)
            }
            guard let next = takenNext else { break }
            takenNext = nil
            if let group, let heard = pipeline.heard.stream, heard != group {
                arriving = (next, heard)
                break
            }
            let advanced = advance(to: next, pipeline: pipeline)
            effects.calls += advanced.calls
            effects.events += advanced.events
        case .durationChanged where arriving != nil:
            break  // the next stream's: asked again when it is heard
        case .durationChanged(let duration?) where phase == .ready:
            if duration != lastDuration {
                lastDuration = duration
                effects.events.append(.durationChanged(duration))
            }
        case .tags(let title, let artists, let album) where active:
            // A stream's own tags; a file's come from the library and the media reader.
            if let url = loadedURL, !url.isFileURL {
                effects.events.append(.tags(url, title: title, artists: artists, album: album))
            }
        case .endOfStream where active:
            if let arriving {
                self.arriving = nil
                effects = advance(to: arriving.url, pipeline: pipeline)
            }
            effects.events.append(.endOfStream)
        case .requestState(.paused) where active:
            // The sound server asked the stream to cork (pulsesink's request): the player decides, and its pause,
            // if any, comes back as a call.
            effects.events.append(.interruptionBegan)
        case .requestState(.playing) where active:
            effects.events.append(.interruptionEnded)
        case .error(let message, _, let fromSink, let streamURI) where active:
            if !fromSink, let failed = failedNext, let streamURI, Self.names(failed, streamURI) {
                break  // more of the failed next stream's errors (a demuxer posts two or three)
            }
            // The stream about-to-finish handed over failed before it started (typically "Could not determine
            // type of stream" from its decodebin). Told apart from the current stream's own late failure (a
            // truncated file's demuxer, after its source was read to the end) by the failing element. The
            // current stream plays on: see EngineEvent.nextFailed for why the pipeline is not stopped here.
            if !fromSink, let next = takenNext, streamURI.map({ Self.names(next, $0) }) ?? true {
                takenNext = nil
                failedNext = next
                effects.events.append(.nextFailed(next, message))
                break
            }
            phase = .failed
            wantsPlaying = false
            takenNext = nil
            arriving = nil
            failedNext = nil
            effects.calls.append(.setState(.null))
            effects.events.append(fromSink ? .outputFailed(message) : .failed(message))
        default:
            break
        }
        return effects
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
    private mutating func asyncDone(pipeline: some PipelineQueries) -> Effects {
        let seekNeeded: Bool
        switch phase {
        case .loading: seekNeeded = startPosition > .zero || rate != 1
        case .seekingToStart(let target): seekNeeded = startPosition != target
        case .idle, .ready, .failed: return Effects()
        }
        guard seekNeeded else { return becomeReady(pipeline: pipeline) }
        phase = .seekingToStart(target: startPosition)
        return Effects(calls: [.seek(startPosition, rate: rate, purpose: .start(load: loadNumber))])
    }

    private mutating func becomeReady(pipeline: some PipelineQueries) -> Effects {
        phase = .ready
        seekTarget = nil
        seekMarkSeen = true
        let duration = pipeline.duration
        lastDuration = duration
        var effects = Effects()
        if let url = loadedURL {
            effects.events.append(.ready(url, duration: duration))
            if !url.isFileURL { effects.events.append(.seekability(url, seekable: pipeline.seekable)) }
        }
        if wantsPlaying { effects.calls.append(.setState(.playing)) }
        return effects
    }
}

/// The queries the state machine makes of a pipeline (position and duration are cheap and never block on a
/// state change); ``PlaybinControl`` answers them, tests give values.
protocol PipelineQueries {
    var position: Duration? { get }
    var duration: Duration? { get }
    /// What is heard; by default the position, in a stream that cannot be told.
    var heard: PlaybinControl.Heard { get }
    /// Whether the stream can be moved in (asked of streams, not files).
    var seekable: Bool { get }
}

extension PipelineQueries {
    var heard: PlaybinControl.Heard { PlaybinControl.Heard(position: position) }
}

extension PlaybinControl: PipelineQueries {}
