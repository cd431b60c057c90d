import Foundation
import Logging
import Synchronization

/// The one owner of playback: takes commands in arrival order, drives its ``AudioEngine``, and tells
/// its observer about every change, synchronously and in order.
///
/// ```swift
/// let player = Player(engine: GStreamerEngine(...), observer: { event in ... })
/// async let _ = player.run()                  // engine events and the 1-second tick
/// await player.open([MediaItem(id: 0, url: fileURL)])
/// try await player.playPause()
/// ```
public actor Player {
    private let engine: any AudioEngine
    private let observer: @Sendable (PlayerEvent) -> Void
    private let logger: Logger
    private let tickClock: any Clock<Duration>

    private var state = PlayerState()
    /// Play order: indices into the queue (shuffled when `state.shuffle`).
    private var order: [Int] = []
    /// Where in `order` the current item is.
    private var orderPosition = 0
    /// The order position the engine will continue with gaplessly, as last told with `setNext`.
    private var pendingNext: Int?
    /// Whether the engine has prerolled the current item.
    private var engineReady = false
    private var nextItemID = 1
    /// Set when the output went away while playing; any command since clears it (see `resumeForReturnedOutput`).
    private var pausedForLostOutput = false
    /// The last snapshot the observer was given: nothing is published twice.
    private var published: PlayerState?

    /// The current position as a function of time; readable from any thread without awaiting the actor.
    public nonisolated let positionClock = SharedPositionClock()

    public init(engine: sending any AudioEngine, tickClock: any Clock<Duration> = ContinuousClock(),
                logger: Logger = Logger(label: "lectern.player"),
                observer: @escaping @Sendable (PlayerEvent) -> Void) {
        self.engine = engine
        self.tickClock = tickClock
        self.logger = logger
        self.observer = observer
    }

    /// Handles engine events and re-anchors the position clock once a second, until cancelled.
    public func run() async {
        let events = engine.events
        let clock = tickClock
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [weak self] in
                for await event in events { await self?.handle(event) }
            }
            group.addTask { [weak self] in
                while !Task.isCancelled {
                    do { try await clock.sleep(for: .seconds(1), tolerance: .milliseconds(50)) } catch { return }
                    await self?.tick()
                }
            }
            await group.next()
            group.cancelAll()
        }
    }

    // MARK: - Reading

    public var snapshot: PlayerState { state }

    /// The position in the current item, from the engine when it knows it.
    public var position: Duration {
        if engineReady, let position = engine.position { return position }
        return positionClock.position()
    }

    public var canGoNext: Bool { nextOrderPosition(wrapping: state.loop == .playlist) != nil }
    public var canGoPrevious: Bool { previousOrderPosition() != nil }

    // MARK: - Commands

    /// Replaces the queue and makes `items[startIndex]` current at `position`, playing or paused; with
    /// `settings`, those are applied first, and clients see one change.
    public func open(_ items: [MediaItem], startAt startIndex: Int = 0, position: Duration = .zero, play: Bool = true,
                     settings: PlaybackSettings? = nil) {
        pausedForLostOutput = false
        guard !items.isEmpty else { return }
        if let settings {
            state.volume = settings.volume.isFinite ? min(max(0, settings.volume), 10) : 1
            state.rate = settings.rate.isFinite ? min(max(PlayerState.minimumRate, settings.rate), PlayerState.maximumRate) : 1
            state.shuffle = settings.shuffle
            state.loop = settings.loop
            engine.setVolume(state.volume)
            engine.setRate(state.rate)
        }
        state.queue = items.map { item in
            var copy = item
            copy.id = nextItemID
            nextItemID += 1
            return copy
        }
        let start = min(max(0, startIndex), items.count - 1)
        rebuildOrder(keeping: start)
        state.status = play ? .playing : .paused
        load(orderPosition: orderPosition, at: position)
    }

    /// Updates what is known of an item (e.g. tags discovered after the queue was opened).
    public func updateItem(_ item: MediaItem) {
        guard let index = state.queue.firstIndex(where: { $0.id == item.id }) else { return }
        var updated = item
        updated.url = state.queue[index].url
        if updated.duration == nil { updated.duration = state.queue[index].duration }
        guard updated != state.queue[index] else { return }
        state.queue[index] = updated
        publish()
    }

    /// Playing stays playing; paused resumes; stopped starts the current item from its beginning.
    public func play() {
        pausedForLostOutput = false
        guard state.currentIndex != nil else { return }
        switch state.status {
        case .playing:
            return
        case .paused:
            state.status = .playing
            anchorClock()
            publish()
            if engineReady { engine.play() }
        case .stopped:
            state.status = .playing
            load(orderPosition: orderPosition, at: .zero)
        }
    }

    public func pause() {
        pausedForLostOutput = false
        guard state.status == .playing else { return }
        // Clients hear of it first; the pipeline's state change may take a buffer's time.
        state.status = .paused
        anchorClock()
        publish()
        engine.pause()
    }

    public func playPause() throws(PlayerError) {
        guard state.currentIndex != nil else { throw .nothingToPlay }
        if state.status == .playing { pause() } else { play() }
    }

    public func stop() {
        pausedForLostOutput = false
        guard let item = state.current, state.status != .stopped else { return }
        let stoppedAt = position
        state.status = .stopped
        engine.stop()
        engineReady = false
        positionClock.set(PositionClock(anchor: .zero))
        publish()
        observer(.stopped(itemID: item.id, at: stoppedAt))
    }

    /// Moves to the next item in play order; paused or stopped stays so.
    public func next() {
        pausedForLostOutput = false
        guard let target = nextOrderPosition(wrapping: state.loop == .playlist) else { return }
        go(to: target)
    }

    public func previous() {
        pausedForLostOutput = false
        guard let target = previousOrderPosition() else { return }
        go(to: target)
    }

    /// Relative seek; below 0 clamps to 0; past the end acts as `next()` (or stops at the last item).
    /// Ignored while stopped: nothing is loaded, and Play starts from the beginning.
    public func seek(by offset: Duration) {
        pausedForLostOutput = false
        guard state.currentIndex != nil, state.status != .stopped else { return }
        let target = max(.zero, position + offset)
        if let duration = state.current?.duration, target >= duration {
            if canGoNext { next() } else { stop() }
            return
        }
        seekWithinItem(to: target)
    }

    /// Absolute seek within the item `itemID`; ignored when that is not the current item, out of range, or stopped.
    public func setPosition(itemID: Int, to target: Duration) {
        pausedForLostOutput = false
        guard let current = state.current, current.id == itemID, target >= .zero, state.status != .stopped else { return }
        if let duration = current.duration, target > duration { return }
        seekWithinItem(to: target)
    }

    public func setVolume(_ volume: Double) throws(PlayerError) {
        pausedForLostOutput = false
        guard volume.isFinite else { throw .invalidValue("volume must be a finite number, not \(volume)") }
        let clamped = min(max(0, volume), 10)
        guard clamped != state.volume else { return }
        state.volume = clamped
        engine.setVolume(clamped)
        publish()
    }

    /// Clamped to [minimumRate, maximumRate]; 0 pauses and keeps the rate.
    public func setRate(_ rate: Double) throws(PlayerError) {
        pausedForLostOutput = false
        guard rate.isFinite else { throw .invalidValue("rate must be a finite number, not \(rate)") }
        if rate == 0 { pause(); return }
        let clamped = min(max(PlayerState.minimumRate, rate), PlayerState.maximumRate)
        guard clamped != state.rate else { return }
        state.rate = clamped
        engine.setRate(clamped)
        anchorClock()
        publish()
    }

    /// Volume, rate, shuffle and loop in one step: clients see one change.
    public func apply(_ settings: PlaybackSettings) throws(PlayerError) {
        pausedForLostOutput = false
        guard settings.volume.isFinite, settings.rate.isFinite, settings.rate > 0 else {
            throw .invalidValue("volume and rate must be finite numbers, and the rate above 0")
        }
        let volume = min(max(0, settings.volume), 10)
        let rate = min(max(PlayerState.minimumRate, settings.rate), PlayerState.maximumRate)
        if volume != state.volume { state.volume = volume; engine.setVolume(volume) }
        if rate != state.rate { state.rate = rate; engine.setRate(rate); anchorClock() }
        state.loop = settings.loop
        if settings.shuffle != state.shuffle {
            state.shuffle = settings.shuffle
            if let current = state.currentIndex { rebuildOrder(keeping: current) }
        }
        updateNext()
        publish()
    }

    public func setLoop(_ loop: LoopMode) {
        pausedForLostOutput = false
        guard loop != state.loop else { return }
        state.loop = loop
        updateNext()
        publish()
    }

    public func setShuffle(_ shuffle: Bool) {
        pausedForLostOutput = false
        guard shuffle != state.shuffle else { return }
        state.shuffle = shuffle
        if let current = state.currentIndex { rebuildOrder(keeping: current) }
        updateNext()
        publish()
    }

    // MARK: - Output changes

    /// Pauses because the output in use went away; returns whether it did (it was playing). The pause is
    /// remembered until any command arrives.
    @discardableResult
    public func pauseForLostOutput() -> Bool {
        guard state.status == .playing else { return false }
        pause()
        pausedForLostOutput = true
        return true
    }

    /// Resumes after the output came back, only when the pause was `pauseForLostOutput`'s and no command
    /// came since; returns whether it resumed.
    @discardableResult
    public func resumeForReturnedOutput() -> Bool {
        guard pausedForLostOutput, state.status == .paused else { return false }
        play()
        return true
    }

    /// Whether the current pause is the lost output's doing (and nothing happened since).
    public var isPausedForLostOutput: Bool { pausedForLostOutput }

    // MARK: - Engine events

    /// Applies one engine event. `run()` calls it for each event the engine reports, in order; tests may
    /// call it directly.
    public func handle(_ event: EngineEvent) {
        switch event {
        case .ready(let url, let duration):
            guard !engineReady, state.current?.url == url, state.status != .stopped else { return }  // stale
            engineReady = true
            if let duration { setCurrentDuration(duration) }
            if state.status == .playing { engine.play() }
            anchorClock()
            publish()
        case .durationChanged(let duration):
            setCurrentDuration(duration)
            publish()
        case .advanced(let url):
            guard let target = pendingNext, state.queue[order[target]].url == url else {
                logger.warning("engine advanced to an unexpected stream", metadata: ["url": "\(url)"])
                return
            }
            let restarted = target == orderPosition
            orderPosition = target
            state.currentIndex = order[target]
            state.lastError = nil
            positionClock.set(PositionClock(anchor: .zero, speed: state.status == .playing ? state.rate : 0))
            updateNext()
            publish()
            // The same item again (loop Track, or a one-item loop Playlist): the trackid doesn't change, so
            // only Seeked tells clients the position went back to 0.
            if restarted { observer(.seeked(.zero)) }
        case .endOfStream:
            endOfQueue()
        case .failed(let message):
            pausedForLostOutput = false
            logger.error("playback failed", metadata: ["error": "\(message)"])
            state.lastError = message
            state.status = .stopped
            engineReady = false
            positionClock.set(PositionClock(anchor: .zero))
            publish()
        }
    }

    private func tick() {
        guard state.status == .playing, engineReady else { return }
        anchorClock()
    }

    // MARK: - Internals

    /// The stream ended without continuing gaplessly: normally at the end of the queue, but also when the
    /// engine asked for the next stream before the player could name it (files shorter than the engine's
    /// look-ahead). Then the next item is loaded, with a short gap rather than a stop.
    private func endOfQueue() {
        switch state.loop {
        case .track:
            load(orderPosition: orderPosition, at: .zero, announce: true)
        case .playlist where !order.isEmpty:
            let next = nextOrderPosition(wrapping: true) ?? 0
            load(orderPosition: next, at: .zero, announce: next == orderPosition)
        case .none where nextOrderPosition(wrapping: false) != nil:
            load(orderPosition: orderPosition + 1, at: .zero)
        default:
            state.status = .stopped
            engine.stop()
            engineReady = false
            positionClock.set(PositionClock(anchor: .zero))
            publish()
        }
    }

    private func go(to target: Int) {
        if state.status == .stopped {
            orderPosition = target
            state.currentIndex = order[target]
            positionClock.set(PositionClock(anchor: .zero))
            publish()
            return
        }
        load(orderPosition: target, at: .zero)
    }

    /// Loads the item at `target` in play order; Seeked follows when it starts elsewhere than 0, or when
    /// `announce` (the same item starting over).
    private func load(orderPosition target: Int, at position: Duration, announce: Bool = false) {
        orderPosition = target
        state.currentIndex = order[target]
        state.lastError = nil
        engineReady = false
        engine.load(state.queue[order[target]].url, at: position)
        positionClock.set(PositionClock(anchor: position))
        updateNext()
        publish()
        if position > .zero || announce { observer(.seeked(position)) }
    }

    private func seekWithinItem(to target: Duration) {
        positionClock.set(PositionClock(anchor: target, speed: state.status == .playing && engineReady ? state.rate : 0))
        observer(.seeked(target))  // before the flushing seek, which may wait for the sink
        engine.seek(to: target)
    }

    private func setCurrentDuration(_ duration: Duration) {
        guard let index = state.currentIndex, duration > .zero else { return }
        state.queue[index].duration = duration
    }

    private func anchorClock() {
        let anchor = (engineReady ? engine.position : nil) ?? positionClock.position()
        let speed = state.status == .playing && engineReady ? state.rate : 0
        positionClock.set(PositionClock(anchor: anchor, speed: speed))
    }

    private func nextOrderPosition(wrapping: Bool) -> Int? {
        guard state.currentIndex != nil, !order.isEmpty else { return nil }
        if orderPosition + 1 < order.count { return orderPosition + 1 }
        return wrapping ? 0 : nil
    }

    private func previousOrderPosition() -> Int? {
        guard state.currentIndex != nil, !order.isEmpty else { return nil }
        if orderPosition > 0 { return orderPosition - 1 }
        return state.loop == .playlist ? order.count - 1 : nil
    }

    /// Play order with `current` first when shuffled, so turning shuffle on never changes the current item.
    private func rebuildOrder(keeping current: Int) {
        let all = Array(state.queue.indices)
        if state.shuffle {
            order = [current] + all.filter { $0 != current }.shuffled()
            orderPosition = 0
        } else {
            order = all
            orderPosition = current
        }
    }

    /// Tells the engine what follows the current item, for a gapless transition.
    private func updateNext() {
        let next: Int?
        switch state.loop {
        case .track: next = state.currentIndex == nil ? nil : orderPosition
        case .playlist: next = nextOrderPosition(wrapping: true)
        case .none: next = nextOrderPosition(wrapping: false)
        }
        pendingNext = next
        engine.setNext(next.map { state.queue[order[$0]].url })
    }

    private func publish() {
        state.canGoNext = canGoNext
        state.canGoPrevious = canGoPrevious
        guard state != published else { return }
        published = state
        observer(.stateChanged(state))
    }
}

/// A ``PositionClock`` behind a lock: written by the player, read by anyone (e.g. the D-Bus thread
/// answering `Get Position`) without a hop to the actor.
public final class SharedPositionClock: Sendable {
    private let clock = Mutex(PositionClock())
    public init() {}
    public func set(_ value: PositionClock) { clock.withLock { $0 = value } }
    public var value: PositionClock { clock.withLock { $0 } }
    public func position(at now: ContinuousClock.Instant = .now) -> Duration { value.position(at: now) }
}
