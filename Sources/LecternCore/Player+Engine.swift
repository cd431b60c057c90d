import Foundation

/// What the engine tells the player (a file ready, its end, a failure, the gapless handover) and the tick that
/// follows the engine's position while playing.
extension Player {
    /// Applies one engine event. `run()` calls it for each event the engine reports, in order; tests may
    /// call it directly.
    public func handle(_ event: EngineEvent) {
        logger.debug("engine event", metadata: ["event": "\(event)", "status": "\(state.status)",
                                                "file": "\(state.current?.url.lastPathComponent ?? "-")"])
        switch event {
        case .ready(let url, let duration):
            // Stale: a load already ready, or one the output failed under (Play loads it again).
            guard case .loading = engineLoad, state.current?.url == url, state.status != .stopped else { return }
            engineLoad = .ready
            consecutiveFailures = 0
            if let duration { setCurrentDuration(duration) }
            if state.status == .playing {
                engine.play()
                holdClock()  // at the load's position, until the output plays from there
            } else {
                setClock(at: position)
            }
            publish()
        case .durationChanged(let duration):
            setCurrentDuration(duration)
            publish()
        case .seekability(let url, let seekable):
            guard let current = state.current, current.url == url, current.isStream else { return }
            state.canSeek = seekable && current.duration != nil
            publish()
        case .tags(let url, let title, let artists, let album):
            // A stream's own tags (a file's come from the library or the media reader).
            guard let index = state.currentIndex, state.queue[index].url == url, state.queue[index].isStream else { return }
            var item = state.queue[index]
            if let title, !title.isEmpty { item.title = title }
            if !artists.isEmpty { item.artists = artists }
            if let album, !album.isEmpty { item.album = album }
            guard item != state.queue[index] else { return }
            state.queue[index] = item
            refreshChapters()
            publish()
        case .advanced(let url):
            // The next one told, else one told before and changed since (the engine had taken it already): the
            // engine plays it, and the player follows.
            let told = pendingNext.flatMap { state.queue[order[$0]].url == url ? $0 : nil }
                ?? offeredNext.sorted().first { state.queue[$0].url == url }.flatMap { order.position(of: $0) }
            guard let target = told else {
                logger.warning("engine advanced to an unexpected stream", metadata: ["url": "\(url)"])
                return
            }
            offeredNext = []
            order.position = target
            state.currentIndex = order[target]
            state.currentChapter = firstChapter(ofItem: order[target])
            playsOutro = false  // a file from its start
            state.lastError = nil
            // The next file from its start, without a gap: what a pause shortened in it is reckoned from there.
            if state.status == .playing { runClock(from: .zero) } else { setClock(at: .zero) }
            updateNext()
            publish()
            tellPosition()
            chapterEnded()
        case .endOfStream:
            fileEnded()
        case .outputFailed(let message):
            logger.error("the output failed", metadata: ["error": "\(message)"])
            loseOutput(message)
        case .interruptionBegan:
            interruptionBegan()
        case .interruptionEnded:
            interruptionEnded()
        case .nextFailed(let url, let message):
            guard let target = pendingNext, state.queue[order[target]].url == url, target != order.position else {
                handle(.failed(message))
                return
            }
            // The next file failed while the engine prepared it; the current one plays on to its end (stopping
            // the engine now can deadlock GStreamer's playbin, see EngineEvent.nextFailed), and there `tick()`
            // loads the file after the bad one.
            let item = state.queue[order[target]]
            logger.error("cannot play a file", metadata: ["file": "\(url.path)", "error": "\(message)"])
            tell(.itemFailed(item, index: order[target], message: message))
            order.failed.insert(order[target])
            advanceAtEndOfFile = true
            state.lastError = message
            publish()
        case .failed(let message):
            if let index = state.currentIndex {
                let item = state.queue[index]
                logger.error("cannot play a file", metadata: ["file": "\(item.url.path)", "error": "\(message)"])
                tell(.itemFailed(item, index: index, message: message))
            }
            if state.status == .paused {
                // Paused, the place stays where the listener left it: the file may be back by the next Play (a
                // disk mounted again, a file restored). Play loads it again there; only a failure then goes on.
                engineLoad = .lost
                engine.stop()
                state.lastError = message
                publish()
                return
            }
            // This file can't be played (truncated, not audio): go on with the next one, so that one bad file
            // doesn't stop a book. After every file of the queue failed in a row, stop.
            outputPause = nil
            engineLoad = .idle
            consecutiveFailures += 1
            if state.status != .stopped, consecutiveFailures < state.queue.count,
               let next = nextOrderPosition(wrapping: state.loop == .queue) {
                load(orderPosition: next, at: state.fileStart(ofItem: order[next]))
                state.lastError = message
                publish()
            } else {
                state.lastError = message
                setStatus(.stopped)
                setClock(at: .zero)
                publish()
            }
        }
    }

    /// The output failed under the current item (the engine's `.outputFailed`, or the sound server gone): not the
    /// stream's fault. The engine holds nothing playable; playing, the player pauses as the output's doing; the
    /// place is kept, and the next Play loads the item again there.
    func loseOutput(_ message: String) {
        let at = position
        engineLoad = .lost
        // The stream is gone, and with it the server's request to it: no uncork will come. Paused by it, the player
        // stays paused, for the listener to resume.
        corkRequested = false
        if outputPause == .interrupted { outputPause = nil }
        if state.status == .playing {
            setStatus(.paused)
            outputPause = .failed
            state.lastError = message
        }
        setClock(at: at)
        publish()
    }

    /// Every ``tickInterval`` while running (`run()`): follows the engine's position with the clock (Player+Clock.swift),
    /// tells of a pause skip silence shortened (Player+Silence.swift), catches a chapter change a wake-up missed,
    /// watches for a stall, and, still playing, tells the observers where (`.playing`). Tests may call it directly.
    public func tick() {
        guard state.status == .playing, engineReady else {
            standing = nil
            watchForStuckLoad()
            return
        }
        let enginePosition = engine.position
        if watchForHandover(enginePosition) { return }
        let skippedBefore = silence.skipped
        followEngineAndCheckPosition()
        // A shortened pause moved the file ahead of the moments planned at the speed (a chapter's start, a line of
        // lyrics, an outro): planned again from here, they come when the file reaches them, not at a later tick.
        if silence.skipped > skippedBefore, state.status == .playing { scheduleWake() }
        watchForStall(enginePosition)
        if state.status == .playing, engineReady, let item = state.current {
            tell(.playing(item, at: view.position()))
        }
    }
}
