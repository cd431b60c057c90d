import Foundation
import Logging

/// The one owner of playback: takes commands in arrival order, drives its ``AudioEngine``, and tells
/// its observers about every change, synchronously and in order; what they and anyone else may read of it
/// without a hop is its ``view``.
///
/// ```swift
/// let player = Player(engine: GStreamerEngine(...), observers: [mpris, listening])
/// async let _ = player.run()                  // engine events and the tick (twice a second while playing)
/// await player.open([MediaItem(id: 0, url: fileURL)])
/// try await player.playPause()
/// ```
///
/// This file holds its state, the commands and publishing; the engine's events and the tick are in
/// Player+Engine.swift, how the position clock follows the engine in Player+Clock.swift, loading, seeking, chapters
/// and the play order in Player+Navigation.swift, the sleep timer
/// in Player+Sleep.swift, the stall and handover watchdogs in Player+Watchdogs.swift, another sound asking for the
/// output (a call) in Player+Interruptions.swift, the book lowered under a spoken prompt in Player+Ducking.swift.
public actor Player {
    let engine: any AudioEngine
    let observers: [any PlayerObserver]
    let logger: Logger
    let tickClock: any Clock<Duration>
    /// Smart rewind, the sleep timer's fade, Previous's restart threshold; a reloaded configuration replaces them.
    var options: ListeningOptions
    /// Time on `tickClock` since the player was made: for pause lengths and the sleep timer.
    let now: @Sendable () -> Duration

    var state = PlayerState()
    /// The loudness gain told to the engine (``PlaybackSettings/gain``).
    var loudnessGain = 1.0
    /// The speech compressor told to the engine (``PlaybackSettings/compressor``).
    var compressor: Double?
    /// Skip silence as told to the engine (``PlaybackSettings/skipSilence``).
    var skipSilence: SkipSilence?
    /// The order the queue plays in (shuffled when `state.shuffle`), where the current item is in it, and the
    /// items that failed as the gapless next one.
    var order = PlayOrder()
    /// The order position the engine will continue with gaplessly, as last told with `setNext`.
    var pendingNext: Int?
    /// The queue items told to the engine as the next one while the current one plays: the engine may have taken one
    /// (in "about-to-finish") before a later `setNext` changed or withdrew it, and then plays it.
    var offeredNext: Set<Int> = []
    /// Where the engine is with the current item.
    var engineLoad = EngineLoad.idle
    /// Files that failed one after the other: the rest of the queue is tried, each file once.
    var consecutiveFailures = 0
    /// The gapless next stream failed while the current one plays on: at the current file's end, where the engine
    /// then stands still, `watchForHandover` loads the file after the bad one.
    var advanceAtEndOfFile = false
    var nextItemID = 1
    var nextQueueNumber = 1
    /// Why the player is paused by something other than the listener: its output went away or failed while
    /// playing, or another sound asked for the output (a call); any command since clears it (see
    /// `resumeForReturnedOutput`, `interruptionEnded`).
    var outputPause: OutputPause?
    /// The sound server asked the current stream to make way for another sound (a cork request) and has not yet said
    /// it may play again; forgotten with the stream (a load, a stop), and once the player plays through it.
    var corkRequested = false
    /// What to do when another sound asks for the output (Player+Interruptions.swift).
    var interruptions = InterruptionMode.pause
    /// The volume last asked of the engine before any ducking (the listener's, or the sleep timer's fade of it).
    var engineVolume = 1.0
    /// A spoken prompt plays over the book: the engine's volume is ``duckedVolume`` of `engineVolume`
    /// (Player+Ducking.swift).
    var ducked = false
    /// When the current pause began (on `now`), for the smart rewind.
    var pausedAt: Duration?
    var sleep: SleepState?
    /// Wakes the player at the next chapter boundary or sleep-timer step while playing.
    var wakeTask: Task<Void, Never>?
    /// The position clock on the player's `now`, and its wait for the output (Player+Clock.swift).
    var clock = ClockKeeping()
    /// The last snapshot the observers were given: nothing is published twice.
    var published: PlayerState?
    /// The stall and handover watchdogs: the engine's position at the last tick (or wake-up at a file's end) while
    /// playing, and since when (on `now`) it has stood there.
    var standing: (position: Duration?, since: Duration)?
    /// Skip silence as the ticks see it: what the engine removed, what of it was heard (Player+Silence.swift).
    var silence = SilenceWatch()
    /// Which moves start an undo entry (``UndoRuns``), on `now`.
    var undoRuns = UndoRuns()
    /// The current file plays on through its skipped outro (``SkipParts``): the listener put the position there
    /// (a seek, a jump, a resume), or the setting changed while it was there.
    var playsOutro = false
    /// Wakes the tick loop when playback starts: it sleeps, with no timer, while nothing plays.
    let startedPlaying = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))

    /// The published state and the position as a function of time; readable from any thread without awaiting
    /// the actor.
    public nonisolated let view = PlayerView()

    /// `observers` hear every event, in this order.
    public init(engine: sending any AudioEngine, tickClock: any Clock<Duration> = ContinuousClock(),
                options: ListeningOptions = ListeningOptions(), logger: Logger = Logger(label: "lectern.player"),
                observers: [any PlayerObserver]) {
        self.engine = engine
        self.tickClock = tickClock
        self.options = options
        self.logger = logger
        self.observers = observers
        self.now = Self.stopwatch(tickClock)
    }

    private static func stopwatch<C: Clock>(_ clock: C) -> @Sendable () -> Duration where C.Duration == Duration {
        let start = clock.now
        return { start.duration(to: clock.now) }
    }

    /// How often ``tick()`` runs while playing. Its `.playing` event is when the daemon saves the position, so
    /// this is what a crash can lose (clients expect a resume within 1 s; half of it is left for a late tick on
    /// a busy machine). One timer for both: each wake-up of a timer costs a few threads' wake-ups
    /// (docs/decisions/cpu-while-playing.md).
    public static let tickInterval: Duration = .milliseconds(500)
    /// How late a tick may come, for the clock to group wake-ups.
    public static let tickTolerance: Duration = .milliseconds(50)

    /// Handles engine events and, while playing, re-anchors the position clock, runs the watchdogs and tells
    /// the observers where it is every ``tickInterval`` (``tick()``), until cancelled. Not playing, nothing wakes:
    /// an idle daemon costs no CPU.
    public func run() async {
        let events = engine.events
        let clock = tickClock
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [weak self] in
                for await event in events { await self?.handle(event) }
            }
            group.addTask { [weak self, startedPlaying = startedPlaying.stream] in
                var playingAgain = startedPlaying.makeAsyncIterator()
                while !Task.isCancelled {
                    guard let playing = await self?.isPlaying else { return }
                    if !playing {
                        await self?.tick()  // resets the watchdogs: a pause is not a stall
                        if await playingAgain.next() == nil { return }  // cancelled
                        continue
                    }
                    do { try await clock.sleep(for: Self.tickInterval, tolerance: Self.tickTolerance) } catch { return }
                    await self?.tick()
                }
            }
            await group.next()
            group.cancelAll()
        }
        wakeTask?.cancel()
    }

    // MARK: - Reading

    /// The state as the actor holds it (between commands, what ``view`` holds too).
    public var snapshot: PlayerState { state }

    var isPlaying: Bool { state.status == .playing }

    /// The position in the current file, from the engine when it knows it.
    /// While the clock waits for the output to play from where it stands (Player+Clock.swift), that place: the engine
    /// may still answer from before.
    public var position: Duration {
        guard engineReady, let heard = heardPosition else { return clockPosition }
        if clock.heldSince != nil, heard <= clock.anchor { return clock.anchor }
        return heard
    }

    /// Where the listener is in the file, the chapter and the book.
    public var progress: BookProgress? { state.progress(atFilePosition: position) }

    public var canGoNext: Bool { nextChapter(wrapping: state.loop == .queue) != nil }
    public var canGoPrevious: Bool { state.currentChapter != nil }

    // MARK: - Commands

    /// Replaces the queue and makes `items[startIndex]` current at `position`, playing or paused; with
    /// `settings`, those are applied first, and clients see one change.
    ///
    /// - Parameters:
    ///   - name: the queue's identity (see ``PlayerState/queueID``); nil for files opened otherwise, numbered anew.
    ///   - shuffleOrder: the play order to keep when `settings` shuffle (a permutation of the items' indices);
    ///     a new one is drawn when it is nil or not a permutation.
    ///   - pausedFor: opened paused, how long the listener has not listened already (a book last played days
    ///     ago): the smart rewind counts it.
    public func open(_ items: [MediaItem], startAt startIndex: Int = 0, position: Duration = .zero, play: Bool = true,
                     settings: PlaybackSettings? = nil, name: QueueID? = nil, shuffleOrder: [Int]? = nil,
                     pausedFor: Duration = .zero) {
        userCommand()
        guard !items.isEmpty else { return }
        if let settings {
            state.volume = settings.volume.isFinite ? min(max(0, settings.volume), 10) : 1
            state.rate = settings.rate.isFinite ? min(max(PlayerState.minimumRate, settings.rate), PlayerState.maximumRate) : 1
            state.shuffle = settings.shuffle
            state.loop = settings.loop
            state.skip = settings.skip
            setEngineVolume(state.volume)
            engine.setRate(state.rate)
        }
        setGain(settings?.gain ?? 1)
        setCompressor(settings?.compressor)
        setSkipSilence(settings?.skipSilence)
        if let name {
            state.queueID = name
        } else {
            state.queueID = .opened(nextQueueNumber)
            nextQueueNumber += 1
        }
        consecutiveFailures = 0
        state.queue = items.map { item in
            var copy = item
            copy.id = nextItemID
            nextItemID += 1
            return copy
        }
        state.chapters = Chapter.chapters(of: state.queue)
        let start = min(max(0, startIndex), items.count - 1)
        if state.shuffle, let shuffleOrder,
           let kept = PlayOrder.shuffled(keeping: shuffleOrder, count: items.count, at: start) {
            order = kept
            state.shuffleOrder = order.queueIndices
        } else {
            rebuildOrder(keeping: start)
            order.failed = []
        }
        setStatus(play ? .playing : .paused)
        pausedAt = play ? nil : now() - max(.zero, pausedFor)  // opened paused: whatever came before, this pause
        // At the very start of a file (a book never played, or finished), after its intro.
        load(orderPosition: order.position, at: position > .zero ? position : state.fileStart(ofItem: order[order.position]))
    }

    /// Updates what is known of an item (e.g. tags discovered after the queue was opened).
    public func updateItem(_ item: MediaItem) {
        guard let index = state.queue.firstIndex(where: { $0.id == item.id }) else { return }
        var updated = item
        updated.url = state.queue[index].url
        updated.libraryFileID = state.queue[index].libraryFileID
        if updated.duration == nil { updated.duration = state.queue[index].duration }
        if updated.lyrics == nil { updated.lyrics = state.queue[index].lyrics }
        guard updated != state.queue[index] else { return }
        state.queue[index] = updated
        refreshChapters()
        publish()
    }

    /// The queue's book is now in `series` at `part` (set by hand): every item says so, and Metadata with them.
    public func setSeries(_ series: String?, part: String?) {
        guard state.queue.contains(where: { $0.series != series || $0.seriesPart != part }) else { return }
        for index in state.queue.indices { (state.queue[index].series, state.queue[index].seriesPart) = (series, part) }
        publish()
    }

    /// Playing stays playing; paused resumes (a little earlier after a long pause: the smart rewind);
    /// stopped starts the current chapter from its beginning.
    public func play() {
        userCommand()
        guard state.currentIndex != nil else { return }
        switch state.status {
        case .playing:
            return
        case .paused:
            let rewind = pausedAt.map { options.smartRewind.rewind(after: now() - $0) } ?? .zero
            setStatus(.playing)
            if rewind > .zero { move(by: .zero - rewind) }
            guard state.status == .playing else { return }
            if engineLoad == .lost {
                load(orderPosition: order.position, at: clockPosition)
                return
            }
            holdClock()
            publish()
            if engineReady { engine.play() }
            playingThroughInterruption()
        case .stopped:
            setStatus(.playing)
            load(orderPosition: order.position, at: state.currentChapter.map(state.entry(ofChapter:)) ?? .zero)
        }
    }

    public func pause() {
        userCommand()
        pauseNow()
    }

    public func playPause() throws(PlayerError) {
        guard state.currentIndex != nil else { throw .nothingToPlay }
        if state.status == .playing { pause() } else { play() }
    }

    public func stop() {
        userCommand()
        guard let item = state.current, state.status != .stopped else { return }
        // The place is where clients saw it stop (the clock), not where the pipeline is: paused, it came to rest a
        // few milliseconds later; playing, its position lags what the clock showed by the output's latency.
        let stoppedAt = clockPosition
        noteMove(.stop)
        setStatus(.stopped)
        engine.stop()
        corkRequested = false
        engineLoad = .idle
        setClock(at: .zero)
        publish()
        tell(.stopped(item, at: stoppedAt))
    }

    /// Moves to the next chapter (a chapter of a file, or a file without chapter marks); paused or stopped stays so.
    public func next() {
        userCommand()
        guard let target = nextChapter(wrapping: state.loop == .queue) else { return }
        noteMove(.chapter)
        go(toChapter: target)
    }

    /// More than a few seconds into a chapter, back to its start; else to the previous chapter (its start).
    public func previous() {
        userCommand()
        guard let current = state.currentChapter else { return }
        let entry = state.entry(ofChapter: current)
        let intoChapter = position - entry
        if state.status != .stopped, intoChapter > options.previousRestartsAfter || previousChapter() == nil {
            noteMove(.chapter)
            seekWithinItem(to: entry)
            return
        }
        guard let target = previousChapter() else { return }
        noteMove(.chapter)
        go(toChapter: target)
    }

    /// "1 file", "12 chapters": for messages.
    static func counted(_ count: Int, _ noun: String) -> String { "\(count) \(noun)\(count == 1 ? "" : "s")" }

    /// Makes chapter `index` current, at its start. Throws for an index out of range.
    public func goTo(chapter index: Int) throws(PlayerError) {
        userCommand()
        guard state.chapters.indices.contains(index) else {
            throw .invalidValue("there is no chapter \(index + 1): \(Self.counted(state.chapters.count, "chapter")), from 1")
        }
        noteMove(.chapter)
        go(toChapter: index)
    }

    /// Moves to `position` in file `index` of the queue (queue order); a stopped player is paused there.
    /// `kind`: what the move is to undo (a jump, a bookmark's); nil for an undo itself, which is not undone.
    public func jump(toFile index: Int, at position: Duration, as kind: MoveKind? = .jump) throws(PlayerError) {
        userCommand()
        guard state.queue.indices.contains(index), let target = order.position(of: index) else {
            throw .invalidValue("there is no file \(index + 1): \(Self.counted(state.queue.count, "file")), from 1")
        }
        guard position >= .zero else { throw .invalidValue("a position in a file counts from 0:00: it cannot be negative") }
        if let length = state.queue[index].duration, position > length {
            throw .invalidValue("file \(index + 1) is \(length.clock) long: \(position.clock) is past its end")
        }
        noteMove(kind)
        if state.status == .stopped { setStatus(.paused) }
        if target == order.position && engineReady {
            seekWithinItem(to: position)
        } else {
            load(orderPosition: target, at: position)
        }
    }

    /// MPRIS's relative seek, within the current chapter: below its start clamps to the start; past its end
    /// acts as `next()` (at the last chapter, as reaching the end). Ignored while stopped.
    public func seek(by offset: Duration) {
        userCommand()
        guard let chapter = state.chapter, state.status != .stopped else { return }
        noteMove(.seek)
        let target = max(chapter.start, position + offset)
        if let end = chapter.end, target >= end {
            if let next = nextChapter(wrapping: state.loop == .queue) { go(toChapter: next) } else { finish() }
            return
        }
        seekWithinItem(to: target)
    }

    /// A book-level move by `offset` in play order, across files in both directions: before the start of
    /// the first file clamps to 0; past the end of the last acts as reaching the end. Ignored while stopped.
    public func skip(by offset: Duration) {
        userCommand()
        guard state.currentIndex != nil, state.status != .stopped else { return }
        noteMove(.seek)
        move(by: offset)
    }

    /// Absolute seek within chapter `chapter` of the queue `queue`; ignored when that is not the current
    /// chapter, the position is outside it, or the player is stopped.
    public func setPosition(queue: QueueID, chapter: Int, to target: Duration) {
        userCommand()
        guard queue == state.queueID, chapter == state.currentChapter, target >= .zero, state.status != .stopped else { return }
        let current = state.chapters[chapter]
        if let length = current.length, target > length { return }
        noteMove(.seek)
        seekWithinItem(to: current.start + target)
    }

    /// The loudness gain of what plays (a book's normalisation, measured after it was opened).
    public func setLoudnessGain(_ gain: Double) {
        setGain(gain)
    }

    /// The loudness gain of what plays (``PlaybackSettings/gain``): told to the engine when it changes.
    private func setGain(_ gain: Double) {
        let gain = gain.isFinite ? min(max(0, gain), PlayerState.maximumGain) : 1
        guard gain != loudnessGain else { return }
        loudnessGain = gain
        engine.setGain(gain)
    }

    /// The speech compressor of what plays (``PlaybackSettings/compressor``): told to the engine when it changes.
    public func setCompressor(_ level: Double?) {
        let level = level.flatMap { $0.isFinite ? $0 : nil }
        guard level != compressor else { return }
        compressor = level
        engine.setCompressor(level)
    }

    /// Skip silence for what plays (``PlaybackSettings/skipSilence``): told to the engine when it changes.
    public func setSkipSilence(_ skipping: SkipSilence?) {
        guard skipping != skipSilence else { return }
        skipSilence = skipping
        engine.setSkipSilence(skipping)
    }

    public func setVolume(_ volume: Double) throws(PlayerError) {
        userCommand()
        guard volume.isFinite else { throw .invalidValue("volume must be a finite number, not \(volume)") }
        let clamped = PlayerState.volume(volume)
        guard clamped != state.volume else { return }
        state.volume = clamped
        setEngineVolume(clamped)
        publish()
    }

    /// Clamped to [minimumRate, maximumRate]; 0 pauses and keeps the rate.
    public func setRate(_ rate: Double) throws(PlayerError) {
        userCommand()
        guard rate.isFinite else { throw .invalidValue("rate must be a finite number, not \(rate)") }
        if rate == 0 { pauseNow(); return }
        let clamped = min(max(PlayerState.minimumRate, rate), PlayerState.maximumRate)
        guard clamped != state.rate else { return }
        changeRate(to: clamped)
        publish()
    }

    /// The engine seeks to change the speed: playing, the clock waits for its output at the new speed.
    private func changeRate(to rate: Double) {
        let at = position
        state.rate = rate
        forgetUnheardSilence()
        engine.setRate(rate)
        setClock(at: at)
        if state.status == .playing, engineReady { holdClock() }
    }

    /// Volume, rate, shuffle and loop in one step: clients see one change.
    public func apply(_ settings: PlaybackSettings) throws(PlayerError) {
        userCommand()
        guard settings.volume.isFinite, settings.rate.isFinite, settings.rate > 0 else {
            throw .invalidValue("volume and rate must be finite numbers, and the rate above 0")
        }
        let volume = PlayerState.volume(settings.volume)
        let rate = min(max(PlayerState.minimumRate, settings.rate), PlayerState.maximumRate)
        if volume != state.volume { state.volume = volume; setEngineVolume(volume) }
        setGain(settings.gain)
        setCompressor(settings.compressor)
        setSkipSilence(settings.skipSilence)
        if rate != state.rate { changeRate(to: rate) }
        state.loop = settings.loop
        if settings.skip != state.skip {
            state.skip = settings.skip
            // Where the listener is now stays theirs: a file already in its new outro plays it.
            playsOutro = isInOutro(position)
        }
        if settings.shuffle != state.shuffle {
            state.shuffle = settings.shuffle
            if let current = state.currentIndex { rebuildOrder(keeping: current) }
        }
        updateNext()
        publish()
    }

    public func setLoop(_ loop: LoopMode) {
        userCommand()
        guard loop != state.loop else { return }
        state.loop = loop
        updateNext()
        publish()
    }

    /// Turning shuffle on draws a new play order (the current file first); it stays until reshuffled.
    public func setShuffle(_ shuffle: Bool) {
        userCommand()
        guard shuffle != state.shuffle else { return }
        state.shuffle = shuffle
        if let current = state.currentIndex { rebuildOrder(keeping: current) }
        updateNext()
        publish()
    }

    /// Smart rewind, the sleep timer's fade and Previous's threshold from now on (a reloaded configuration).
    public func setOptions(_ options: ListeningOptions) {
        self.options = options
    }

    /// Draws a new shuffled order (the current file first); does nothing unless shuffled.
    public func reshuffle() {
        userCommand()
        guard state.shuffle, let current = state.currentIndex else { return }
        rebuildOrder(keeping: current)
        updateNext()
        publish()
    }

    /// Any command from a client, also those that do not reach the player otherwise (e.g. a bookmark):
    /// cancels an automatic resume and extends a fading sleep timer.
    public func noteActivity() { userCommand() }

    // MARK: - Output changes

    /// Pauses because the output in use went away; returns whether it did (it was playing, or paused only by an
    /// interruption, whose pause this one replaces: the end of the call then does not resume on another output, the
    /// output's return does). The pause is remembered until any command arrives.
    @discardableResult
    public func pauseForLostOutput() -> Bool {
        guard state.status == .playing || outputPause == .interrupted else { return false }
        pauseNow()
        outputPause = .lost
        return true
    }

    /// Resumes after the output came back, only when the pause was `pauseForLostOutput`'s and no command
    /// came since; returns whether it resumed. A cork request made before the loss is over for the server, which
    /// forgets it for a stream it moves (PulseAudio's module-role-cork; no uncork comes): the stream plays through
    /// it (`.playingThrough`: the server left it muted).
    @discardableResult
    public func resumeForReturnedOutput() -> Bool {
        guard isPausedForLostOutput, state.status == .paused else { return false }
        play()
        // What the lost output held was never heard, and a stream the sound server moved to another sink meanwhile
        // comes back past it (PulseAudio drops what it buffered, up to its 2 s): playing goes on from where the clock
        // stopped, not from where the stream got to.
        if state.status == .playing, engineReady {
            forgetUnheardSilence()
            engine.seek(to: clock.anchor)
        }
        return true
    }

    /// Whether the current pause is the lost or failed output's doing (and nothing happened since).
    public var isPausedForLostOutput: Bool { outputPause == .lost || outputPause == .failed }

    /// The sound server went away (`reason`: how). The stream the engine holds played to it and is dead, whether
    /// or not the engine has said so yet: pulsesink notices when it next writes or changes state, at times only
    /// once playback has resumed, and would then fail under a resume. So the player does now what the engine's
    /// `.outputFailed` does (``loseOutput(_:)``) and releases the stream: playing, it pauses as the output's doing;
    /// the place is kept, and the next Play, the route's or a listener's, loads the item again there. An engine
    /// failure heard before or after this changes nothing more. Returns whether the player is paused because its
    /// output failed: by this call, or by the engine's failure before it, with no command since (not by an earlier
    /// loss of the output, whose return is still the one to wait for).
    @discardableResult
    public func soundServerLost(_ reason: String) -> Bool {
        if engineLoad != .idle, engineLoad != .lost {
            loseOutput("the sound server went away: \(reason)")
            engine.stop()
        }
        return outputPause == .failed
    }

    // MARK: - Internals

    /// What every command does first.
    func userCommand() {
        outputPause = nil
        extendSleepTimerIfFading()
    }

    /// Tells the observers where the listener is, before a move of `kind`, when the move starts an undo entry
    /// (``UndoRuns``); a move that is an undo (nil) ends the run instead.
    func noteMove(_ kind: MoveKind?) {
        guard let kind else { undoRuns.reset(); return }
        guard let item = state.current, undoRuns.startsEntry(kind, at: now()) else { return }
        tell(.moving(UndoPoint(queueID: state.queueID, item: item, position: view.position(), kind: kind)))
    }

    func pauseNow() {
        guard state.status == .playing else { return }
        // Clients hear of it first; the pipeline's state change may take a buffer's time.
        let at = position
        setStatus(.paused)
        setClock(at: at)
        publish()
        engine.pause()
    }

    /// Changes the status, keeping the pause start and the sleep timer's count in step.
    func setStatus(_ status: PlaybackStatus) {
        countSleepTime()
        if status == .paused && state.status != .paused { pausedAt = now() }
        if status != .paused { pausedAt = nil }
        if status == .playing, state.status != .playing { startedPlaying.continuation.yield() }
        state.status = status
        sleep?.countedAt = status == .playing ? now() : nil
        syncSleepStatus()
    }

    /// The current file ended (its stream, or playing reached its skipped outro): on with what follows it.
    func fileEnded() {
        if advanceAtEndOfFile {
            advancePastFailedNext()
            return
        }
        endOfQueue()
        if state.status == .playing { chapterEnded() }
    }

    /// The current file ended after its gapless next one failed: on with the file after the bad one.
    func advancePastFailedNext() {
        if let next = nextOrderPosition(wrapping: state.loop == .queue, skippingFailed: true) {
            load(orderPosition: next, at: state.fileStart(ofItem: order[next]))
        } else {
            finish()
        }
        chapterEnded()
    }

    /// The stream ended without continuing gaplessly: normally at the end of the queue, but also when the
    /// engine asked for the next stream before the player could name it (files shorter than the engine's
    /// look-ahead). Then the next item is loaded, with a short gap rather than a stop.
    func endOfQueue() {
        switch state.loop {
        case .chapter:
            load(orderPosition: order.position, at: state.currentChapter.map(state.entry(ofChapter:)) ?? .zero)
        case .queue where !order.isEmpty:
            let next = nextOrderPosition(wrapping: true) ?? 0
            load(orderPosition: next, at: state.fileStart(ofItem: order[next]))
        case .none where nextOrderPosition(wrapping: false) != nil:
            load(orderPosition: order.position + 1, at: state.fileStart(ofItem: order[order.position + 1]))
        default:
            finish()
        }
    }

    /// The end of the queue was reached: stopped, and the observers told the book is finished.
    func finish() {
        if sleep?.fading == true { setEngineVolume(state.volume) }
        sleep = nil
        setStatus(.stopped)
        engine.stop()
        corkRequested = false
        engineLoad = .idle
        setClock(at: .zero)
        publish()
        tell(.finished)
    }

    func publish() {
        placeLyricsLine()
        scheduleWake()
        state.canGoNext = canGoNext
        state.canGoPrevious = canGoPrevious
        // The sleep timer's count may change with the state unchanged (the same timer set again).
        view.publish(state, sleep: sleepCount)
        guard state != published else { return }
        let previous = published ?? PlayerState()
        published = state
        tell(.stateChanged(state, previous: previous))
    }

    /// The synced line heard now: the one published while the position is still in it, else found again.
    private func placeLyricsLine() {
        guard state.status != .stopped, let lyrics = state.current?.lyrics, lyrics.isSynced else {
            state.lyricsLine = nil
            return
        }
        let position = view.position()
        if state.lyricsLine?.holds(position, in: lyrics) != true { state.lyricsLine = LyricsCursor(lyrics, at: position) }
    }

    /// Runs `body` with the state last published, on the player: in turn with the observers' events, so that what
    /// `body` publishes from it is never older than what they published (e.g. Metadata made again with a new title
    /// template).
    public func withPublishedState(_ body: @Sendable (PlayerState) -> Void) {
        body(published ?? state)
    }

    func tell(_ event: PlayerEvent) {
        switch event {
        case .seeked, .silenceSkipped: clock.rebase(at: now())  // clients reckon from here now
        default: break
        }
        for observer in observers { observer.handle(event) }
    }
}

/// Why the player paused for its output.
enum OutputPause {
    /// The output in use went away: the route's pause (``Player/pauseForLostOutput()``).
    case lost
    /// The output failed under the stream: the engine's `.outputFailed`, or the sound server gone.
    case failed
    /// Another sound asked for the output (a call): the cork request's pause (``Player/interruptionBegan()``).
    case interrupted
}

/// Where the engine is with the player's current item.
enum EngineLoad: Equatable {
    /// Nothing loaded: stopped, finished, or the file failed.
    case idle
    /// Asked to load at `since` (on the player's `now`), until the engine reports ready; `retried`: this is the
    /// second try (see `watchForStuckLoad`).
    case loading(since: Duration, retried: Bool)
    /// Prerolled: commands act on the stream.
    case ready
    /// The output failed or playback stalled under the item: the engine holds nothing, and the next Play loads
    /// the item again where it was.
    case lost
}

extension Player {
    /// Whether the engine has prerolled the current item.
    var engineReady: Bool { engineLoad == .ready }
}
