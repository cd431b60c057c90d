import Foundation

/// Where playback goes: loading an item of the play order, seeking within it, chapter boundaries, the play
/// order and the gapless next file.
extension Player {
    /// Moves by `offset` from the current position in play order, crossing files.
    func move(by offset: Duration) {
        guard state.canSeek else { return }
        var target = position + offset
        var at = order.position
        while target < .zero {
            guard at > 0, let duration = state.queue[order[at - 1]].duration else { target = .zero; break }
            at -= 1
            target += duration
        }
        while let duration = state.queue[order[at]].duration, target >= duration {
            guard at + 1 < order.count else {
                if state.loop == .queue { at = 0; target = .zero; break }
                finish()
                return
            }
            target -= duration
            at += 1
        }
        if at == order.position && engineReady {
            seekWithinItem(to: target)
        } else {
            load(orderPosition: at, at: target)
        }
    }

    /// Makes chapter `index` current at its entry (``PlayerState/entry(ofChapter:)``: after its file's skipped intro).
    func go(toChapter index: Int) {
        let chapter = state.chapters[index]
        let entry = state.entry(ofChapter: index)
        guard let target = order.position(of: chapter.itemIndex) else { return }
        if state.status == .stopped {
            order.position = target
            state.currentIndex = chapter.itemIndex
            state.currentChapter = index
            setClock(at: entry)
            publish()
            return
        }
        if target == order.position && engineReady {
            seekWithinItem(to: entry)
        } else {
            load(orderPosition: target, at: entry)
        }
    }

    /// Loads the item at `target` in play order; Seeked follows, after the new chapter is published (see
    /// ``tellPosition()``).
    func load(orderPosition target: Int, at position: Duration) {
        advanceAtEndOfFile = false
        order.position = target
        state.currentIndex = order[target]
        state.currentChapter = state.chapterIndex(atFilePosition: position)
        playsOutro = isInOutro(position)
        state.lastError = nil
        // A stream can be moved in once the engine says so (``EngineEvent/seekability(_:seekable:)``).
        state.canSeek = !state.queue[order[target]].isStream
        engineLoad = .loading(since: now(), retried: false)
        corkRequested = false  // a new stream: the server asks it again if the other sound still plays
        offeredNext = []
        forgetUnheardSilence()
        engine.load(state.queue[order[target]].url, at: position)
        setClock(at: position)
        if state.status == .playing { holdClock() }
        updateNext()
        publish()
        tellPosition()
    }

    /// Seeks in the current file; clients see the new chapter (if it changed), then Seeked.
    func seekWithinItem(to target: Duration) {
        guard state.canSeek else { return }  // a stream whose server allows no ranges, or of unknown length
        setClock(at: target)
        if state.status == .playing { holdClock() }
        state.currentChapter = state.chapterIndex(atFilePosition: target)
        playsOutro = isInOutro(target)
        publish()
        tellPosition()  // before the flushing seek, which may wait for the sink
        forgetUnheardSilence()
        engine.seek(to: target)
    }

    /// After the clock followed the engine (``followEngineAndTell()``): playing went past a chapter boundary inside
    /// the file: the next chapter is current, and Seeked says where in it
    /// (unless `tellingSkippedSilence`: the caller tells the jump that reached it), or, with loop chapter, the chapter
    /// starts over; or past the start of a synced line of lyrics: it is published.
    func checkPosition(tellingSkippedSilence: Bool = false) {
        guard state.status == .playing, engineReady, let current = state.currentChapter else { return }
        if !playsOutro, isInOutro(position) {
            fileEnded()
            return
        }
        // The caller followed the engine with the clock: the line is never ahead of what is heard, and publishing
        // (which places the line by the clock) says the same as this test.
        if let lyrics = state.current?.lyrics, lyrics.isSynced, state.lyricsLine?.holds(view.position(), in: lyrics) != true {
            publish()
        }
        let now = position
        guard let chapter = state.chapterIndex(atFilePosition: now), chapter != current else {
            updateSleepTimer()
            return
        }
        if state.loop == .chapter && chapter == current + 1 {
            seekWithinItem(to: state.entry(ofChapter: current))
        } else {
            state.currentChapter = chapter
            publish()
            if !tellingSkippedSilence { tellPosition() }
        }
        chapterEnded()
        updateSleepTimer()
    }

    func setCurrentDuration(_ duration: Duration) {
        guard let index = state.currentIndex, duration > .zero else { return }
        state.queue[index].duration = duration
        refreshChapters()
    }

    /// Rebuilds the chapters after what is known of the files changed.
    func refreshChapters() {
        state.chapters = Chapter.chapters(of: state.queue)
        state.currentChapter = state.chapterIndex(atFilePosition: state.status == .stopped ? clockPosition : position)
    }

    /// Where the current file's skipped outro begins (where playing goes on to the next file); nil when none is.
    var outroStart: Duration? {
        guard let index = state.currentIndex, let end = state.fileEnd(ofItem: index),
              let duration = state.queue[index].duration, end < duration else { return nil }
        return end
    }

    /// Whether `position` is in the current file's skipped outro.
    func isInOutro(_ position: Duration) -> Bool { outroStart.map { position >= $0 } ?? false }

    func firstChapter(ofItem item: Int) -> Int? { state.chapters.firstIndex { $0.itemIndex == item } }
    func lastChapter(ofItem item: Int) -> Int? { state.chapters.lastIndex { $0.itemIndex == item } }

    /// The chapter after the current one: the next chapter of this file, else the first of the next file in play order.
    func nextChapter(wrapping: Bool) -> Int? {
        guard let current = state.currentChapter else { return nil }
        if current + 1 < state.chapters.count, state.chapters[current + 1].itemIndex == state.chapters[current].itemIndex {
            return current + 1
        }
        return nextOrderPosition(wrapping: wrapping).flatMap { firstChapter(ofItem: order[$0]) }
    }

    /// The chapter before the current one in this file, else the last of the previous file in play order.
    func previousChapter() -> Int? {
        guard let current = state.currentChapter else { return nil }
        if current > 0, state.chapters[current - 1].itemIndex == state.chapters[current].itemIndex { return current - 1 }
        return previousOrderPosition().flatMap { lastChapter(ofItem: order[$0]) }
    }

    /// The next position in play order; with `skippingFailed`, past items that already failed as the next one.
    func nextOrderPosition(wrapping: Bool, skippingFailed: Bool = false) -> Int? {
        guard state.currentIndex != nil else { return nil }
        return order.next(wrapping: wrapping, skippingFailed: skippingFailed)
    }

    func previousOrderPosition() -> Int? {
        guard state.currentIndex != nil else { return nil }
        return order.previous(wrapping: state.loop == .queue)
    }

    /// Play order with `current` first when shuffled, so turning shuffle on never changes the current item. The
    /// files that failed as the next one stay marked.
    func rebuildOrder(keeping current: Int) {
        let failed = order.failed
        order = state.shuffle ? .shuffled(count: state.queue.count, first: current)
                              : .queueOrder(count: state.queue.count, at: current)
        order.failed = failed
        state.shuffleOrder = state.shuffle ? order.queueIndices : nil
    }

    /// Tells the engine what follows the current item, for a gapless transition. With loop chapter, a file
    /// of one chapter follows itself; a file of several chapters is looped by seeking (see `checkPosition`).
    /// While intros or outros are skipped there is none: each file is loaded at its start when the one before ends
    /// (docs/decisions/skip-intros-and-outros.md).
    func updateNext() {
        let next: Int?
        switch state.loop {
        case _ where !state.skip.isOff:
            next = nil
        case .chapter:
            let single = state.currentIndex.map { firstChapter(ofItem: $0) == lastChapter(ofItem: $0) } ?? false
            next = single ? order.position : nil
        case .queue: next = nextOrderPosition(wrapping: true, skippingFailed: true)
        case .none: next = nextOrderPosition(wrapping: false, skippingFailed: true)
        }
        pendingNext = next
        if let next { offeredNext.insert(order[next]) }
        engine.setNext(next.map { state.queue[order[$0]].url })
    }
}
