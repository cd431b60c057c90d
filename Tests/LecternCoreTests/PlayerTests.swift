import Foundation
import LecternCore
import Testing

// MARK: - Opening

@Suite struct OpenTests {
    @Test func openLoadsTheFirstItemAndPlaysOnlyAfterReady() async {
        await withHarness { h in
            await h.player.open(makeItems(3, duration: nil))

            // Loaded, the next one queued gaplessly, but not yet told to play.
            #expect(h.engine.calls == [.load(fileURL(0), at: .zero), .setNext(fileURL(1))])
            #expect(h.log.seeks == [.zero])  // where it starts, after the new track is published
            let opened = await h.player.snapshot
            #expect(opened.currentIndex == 0)
            #expect(opened.current?.url == fileURL(0))
            #expect(opened.status == .playing)
            #expect(opened.queue.map(\.url) == [fileURL(0), fileURL(1), fileURL(2)])
            #expect(h.log.states.count == 1)
            #expect(h.log.lastState == opened)

            h.reset()
            await h.ready(.seconds(100))
            #expect(h.engine.calls == [.play])
            #expect(h.engine.isPlaying)
            #expect(h.log.states.count == 1)
            #expect(h.log.lastState?.status == .playing)
            #expect(h.log.lastState?.current?.duration == .seconds(100))
            #expect(h.log.seeks == [])
        }
    }

    @Test func openPausedNeverPlays() async {
        await withHarness { h in
            await h.player.open(makeItems(2), play: false)
            await h.ready(.seconds(100))
            #expect(!h.engine.calls.contains(.play))
            #expect(!h.engine.isPlaying)
            #expect(h.log.lastState?.status == .paused)
        }
    }

    @Test func openGivesFreshUniqueIds() async {
        await withHarness { h in
            await h.player.open(makeItems(3))
            let first = await h.player.snapshot.queue.map(\.id)
            await h.player.open(makeItems(3))
            let second = await h.player.snapshot.queue.map(\.id)
            #expect(Set(first).count == 3)
            #expect(Set(second).count == 3)
            #expect(Set(first).isDisjoint(with: second))
        }
    }

    @Test func openAtSavedPositionPublishesTheItemBeforeSeeked() async {
        await withHarness { h in
            await h.player.open(makeItems(3), startAt: 1, position: .seconds(30))

            #expect(h.engine.calls == [.load(fileURL(1), at: .seconds(30)), .setNext(fileURL(2))])
            let events = h.log.all
            #expect(events.count == 2)
            guard events.count == 2 else { return }
            guard case .stateChanged(let state, _) = events[0] else {
                Issue.record("first event should be stateChanged, got \(events[0])")
                return
            }
            #expect(state.currentIndex == 1)
            #expect(state.current?.url == fileURL(1))
            #expect(events[1] == .seeked(.seconds(30)))
            #expect(h.positionClock.anchor == .seconds(30))
        }
    }

    @Test func gaplessNextIsTheSecondItemAfterOpen() async {
        await withHarness { h in
            await h.player.open(makeItems(3))
            #expect(h.engine.nextURL == fileURL(1))
            #expect(h.engine.calls.last == .setNext(fileURL(1)))
        }
    }

    @Test func openWithNoItemsDoesNothing() async {
        await withHarness { h in
            await h.player.open([])
            #expect(h.engine.calls == [])
            #expect(h.log.all == [])
            #expect(await h.player.snapshot.currentIndex == nil)
        }
    }
}

// MARK: - Play, pause, stop

@Suite struct TransportTests {
    @Test func playWhilePlayingDoesNotToggle() async {
        await withHarness { h in
            await h.player.open(makeItems(2))
            await h.ready(.seconds(100))
            h.reset()

            await h.player.play()
            #expect(h.engine.calls == [])
            #expect(h.log.all == [])
            #expect(await h.player.snapshot.status == .playing)
            #expect(h.engine.isPlaying)
        }
    }

    @Test func playWhilePausedResumesWhereItWas() async {
        await withHarness { h in
            await h.player.open(makeItems(2))
            await h.ready(.seconds(100))
            h.engine.advance(by: .seconds(12))
            await h.player.pause()
            h.reset()

            await h.player.play()
            #expect(h.engine.calls == [.play])
            #expect(h.log.states.map(\.status) == [.playing])
            #expect(h.log.seeks == [])
            #expect(await h.player.position == .seconds(12))
        }
    }

    @Test func playWithNothingLoadedDoesNothing() async {
        await withHarness { h in
            await h.player.play()
            #expect(h.engine.calls == [])
            #expect(h.log.all == [])
        }
    }

    @Test func pauseWhenPausedDoesNothing() async {
        await withHarness { h in
            await h.player.open(makeItems(2))
            await h.ready(.seconds(100))
            h.reset()

            await h.player.pause()
            #expect(h.engine.calls == [.pause])
            #expect(h.log.states.map(\.status) == [.paused])

            h.reset()
            await h.player.pause()
            #expect(h.engine.calls == [])
            #expect(h.log.all == [])
            #expect(await h.player.snapshot.status == .paused)
        }
    }

    @Test func playPauseWithNothingLoadedThrows() async {
        await withHarness { h in
            await #expect(throws: PlayerError.nothingToPlay) { try await h.player.playPause() }
            #expect(h.engine.calls == [])
            #expect(h.log.all == [])
        }
    }

    @Test func playPauseToggles() async throws {
        try await withHarness { h in
            await h.player.open(makeItems(2))
            await h.ready(.seconds(100))
            h.reset()

            try await h.player.playPause()
            #expect(h.engine.calls == [.pause])
            #expect(await h.player.snapshot.status == .paused)
            try await h.player.playPause()
            #expect(h.engine.calls == [.pause, .play])
            #expect(await h.player.snapshot.status == .playing)
        }
    }

    @Test func stopThenPlayReloadsFromTheBeginning() async {
        await withHarness { h in
            await h.player.open(makeItems(3), startAt: 1, position: .seconds(40))
            await h.ready(.seconds(100))
            h.engine.advance(by: .seconds(5))
            h.reset()

            await h.player.stop()
            #expect(h.engine.calls == [.stop])
            #expect(h.log.states.map(\.status) == [.stopped])
            #expect(h.log.lastState?.currentIndex == 1)
            #expect(await h.player.position == .zero)

            h.reset()
            await h.player.play()
            #expect(h.engine.calls == [.load(fileURL(1), at: .zero), .setNext(fileURL(2))])
            #expect(h.log.lastState?.status == .playing)
            #expect(h.log.seeks == [.zero])  // where it starts, after the new track is published

            h.reset()
            await h.ready(.seconds(100))
            #expect(h.engine.calls == [.play])
            #expect(h.engine.isPlaying)
        }
    }

    @Test func stopWhenStoppedDoesNothing() async {
        await withHarness { h in
            await h.player.open(makeItems(2))
            await h.player.stop()
            h.reset()
            await h.player.stop()
            #expect(h.engine.calls == [])
            #expect(h.log.all == [])
        }
    }
}

// MARK: - Next and previous

@Suite struct NavigationTests {
    @Test func nextAndPreviousMoveThroughTheQueue() async {
        await withHarness { h in
            await h.player.open(makeItems(3))
            await h.ready(.seconds(100))
            #expect(await h.player.canGoPrevious == true)  // Previous restarts the first chapter
            #expect(await h.player.canGoNext == true)
            h.reset()

            await h.player.next()
            #expect(h.engine.calls == [.load(fileURL(1), at: .zero), .setNext(fileURL(2))])
            #expect(h.log.states.map(\.currentIndex) == [1])
            #expect(h.log.lastState?.status == .playing)
            #expect(h.log.lastState?.canGoPrevious == true)
            #expect(h.log.lastState?.canGoNext == true)
            #expect(h.log.seeks == [.zero])  // where it starts, after the new track is published

            await h.ready(.seconds(100))
            h.reset()
            await h.player.next()
            #expect(h.engine.calls == [.load(fileURL(2), at: .zero), .setNext(nil)])
            #expect(h.log.lastState?.currentIndex == 2)
            #expect(h.log.lastState?.canGoNext == false)

            await h.ready(.seconds(100))
            h.reset()
            await h.player.previous()
            #expect(h.engine.calls == [.load(fileURL(1), at: .zero), .setNext(fileURL(2))])
            #expect(h.log.lastState?.currentIndex == 1)
            await h.ready(.seconds(100))
            #expect(h.engine.calls.last == .play)
        }
    }

    @Test func nextAndPreviousWhilePausedStayPaused() async {
        await withHarness { h in
            await h.player.open(makeItems(3))
            await h.ready(.seconds(100))
            await h.player.pause()
            h.reset()

            await h.player.next()
            #expect(h.log.lastState?.status == .paused)
            await h.ready(.seconds(100))
            await h.player.previous()
            #expect(h.log.lastState?.status == .paused)
            await h.ready(.seconds(100))

            #expect(h.engine.calls == [
                .load(fileURL(1), at: .zero), .setNext(fileURL(2)),
                .load(fileURL(0), at: .zero), .setNext(fileURL(1)),
            ])
            #expect(!h.engine.isPlaying)
            #expect(h.log.states.allSatisfy { $0.status == .paused })
            #expect(await h.player.snapshot.currentIndex == 0)
        }
    }

    @Test func nextWhileStoppedMovesWithoutLoading() async {
        await withHarness { h in
            await h.player.open(makeItems(3))
            await h.ready(.seconds(100))
            await h.player.stop()
            h.reset()

            await h.player.next()
            #expect(h.engine.calls == [])
            #expect(h.log.states.map(\.currentIndex) == [1])
            #expect(h.log.lastState?.status == .stopped)

            await h.player.play()
            #expect(h.engine.calls == [.load(fileURL(1), at: .zero), .setNext(fileURL(2))])
        }
    }

    @Test func nextAtTheEndWithoutLoopDoesNothing() async {
        await withHarness { h in
            await h.player.open(makeItems(3), startAt: 2)
            await h.ready(.seconds(100))
            #expect(await h.player.canGoNext == false)
            #expect(h.log.lastState?.canGoNext == false)
            h.reset()

            await h.player.next()
            #expect(h.engine.calls == [])
            #expect(h.log.all == [])
            #expect(await h.player.snapshot.currentIndex == 2)
            #expect(await h.player.snapshot.status == .playing)
        }
    }

    @Test func previousAtTheFirstTrackWithoutLoopRestartsIt() async {
        await withHarness { h in
            await h.player.open(makeItems(3))
            await h.ready(.seconds(100))
            h.engine.advance(by: .seconds(2))
            h.reset()
            await h.player.previous()
            #expect(h.engine.calls == [.seek(.zero)])
            #expect(h.log.withoutUndoPoints == [.seeked(.zero)])
            #expect(await h.player.snapshot.currentIndex == 0)
        }
    }

    @Test func loopQueueWrapsBothWays() async {
        await withHarness { h in
            await h.player.open(makeItems(3), startAt: 2)
            await h.ready(.seconds(100))
            h.reset()

            await h.player.setLoop(.queue)
            #expect(h.engine.calls == [.setNext(fileURL(0))])
            #expect(h.log.states.count == 1)
            #expect(h.log.lastState?.loop == .queue)
            #expect(h.log.lastState?.canGoNext == true)
            #expect(h.log.lastState?.canGoPrevious == true)

            h.reset()
            await h.player.next()
            #expect(h.engine.calls == [.load(fileURL(0), at: .zero), .setNext(fileURL(1))])
            #expect(h.log.lastState?.currentIndex == 0)
            #expect(h.log.lastState?.canGoPrevious == true)
            await h.ready(.seconds(100))

            h.reset()
            await h.player.previous()
            #expect(h.engine.calls == [.load(fileURL(2), at: .zero), .setNext(fileURL(0))])
            #expect(h.log.lastState?.currentIndex == 2)
        }
    }
}

// MARK: - Seeking

@Suite struct SeekTests {
    @Test func relativeSeekMovesAndEmitsSeeked() async {
        await withHarness { h in
            await h.player.open(makeItems(2))
            await h.ready(.seconds(100))
            h.engine.advance(by: .seconds(20))
            h.reset()

            await h.player.seek(by: .seconds(15))
            #expect(h.engine.calls == [.seek(.seconds(35))])
            #expect(h.log.withoutUndoPoints == [.seeked(.seconds(35))])
            #expect(await h.player.position == .seconds(35))
            #expect(h.positionClock.anchor == .seconds(35))
            #expect(h.positionClock.speed == 0, "the clock runs once the output plays from there")
            await h.outputPlays()
            #expect(h.positionClock.speed == 1)

            h.reset()
            await h.player.seek(by: .seconds(-10))  // from where the output played to
            #expect(h.engine.calls == [.seek(.milliseconds(25_040))])
            #expect(h.log.withoutUndoPoints == [.seeked(.milliseconds(25_040))])
        }
    }

    @Test func seekBelowZeroClampsToZero() async {
        await withHarness { h in
            await h.player.open(makeItems(2))
            await h.ready(.seconds(100))
            h.engine.advance(by: .seconds(5))
            h.reset()

            await h.player.seek(by: .seconds(-10))
            #expect(h.engine.calls == [.seek(.zero)])
            #expect(h.log.withoutUndoPoints == [.seeked(.zero)])
            #expect(await h.player.position == .zero)
        }
    }

    @Test func seekPastTheEndActsAsNext() async {
        await withHarness { h in
            await h.player.open(makeItems(3))
            await h.ready(.seconds(100))
            h.engine.advance(by: .seconds(95))
            h.reset()

            await h.player.seek(by: .seconds(45))
            #expect(h.engine.calls == [.load(fileURL(1), at: .zero), .setNext(fileURL(2))])
            #expect(!h.engine.calls.contains(where: { if case .seek = $0 { true } else { false } }))
            #expect(h.log.lastState?.currentIndex == 1)
            #expect(h.log.lastState?.status == .playing)
            #expect(h.log.seeks == [.zero])  // where it starts, after the new track is published
        }
    }

    @Test func seekPastTheEndOfTheLastItemStops() async {
        await withHarness { h in
            await h.player.open(makeItems(2), startAt: 1)
            await h.ready(.seconds(100))
            h.engine.advance(by: .seconds(95))
            h.reset()

            await h.player.seek(by: .seconds(45))
            #expect(h.engine.calls == [.stop])
            #expect(h.log.states.map(\.status) == [.stopped])
            #expect(h.log.lastState?.currentIndex == 1)
            #expect(h.log.seeks == [])
        }
    }

    @Test func setPositionSeeksWithinTheCurrentItem() async {
        await withHarness { h in
            await h.player.open(makeItems(2))
            await h.ready(.seconds(100))
            guard let queue = await h.player.snapshot.queueID else { Issue.record("no queue after open"); return }
            h.reset()

            await h.player.setPosition(queue: queue, chapter: 0, to: .seconds(60))
            #expect(h.engine.calls == [.seek(.seconds(60))])
            #expect(h.log.withoutUndoPoints == [.seeked(.seconds(60))])

            // The very end is still in range.
            h.reset()
            await h.player.setPosition(queue: queue, chapter: 0, to: .seconds(100))
            #expect(h.engine.calls == [.seek(.seconds(100))])
            #expect(h.log.withoutUndoPoints == [.seeked(.seconds(100))])
        }
    }

    @Test(arguments: ["stale id", "old queue id", "negative", "past the end"])
    func setPositionIgnoresInvalidRequests(_ kind: String) async {
        await withHarness { h in
            await h.player.open(makeItems(2))
            guard let oldQueue = await h.player.snapshot.queueID else { Issue.record("no queue after open"); return }
            await h.player.open(makeItems(2))
            await h.ready(.seconds(100))
            guard let queue = await h.player.snapshot.queueID else { Issue.record("no queue after open"); return }
            #expect(queue != oldQueue)
            h.engine.advance(by: .seconds(10))
            h.reset()

            switch kind {
            case "stale id": await h.player.setPosition(queue: queue, chapter: 1, to: .seconds(50))
            case "old queue id": await h.player.setPosition(queue: oldQueue, chapter: 0, to: .seconds(50))
            case "negative": await h.player.setPosition(queue: queue, chapter: 0, to: .seconds(-1))
            default: await h.player.setPosition(queue: queue, chapter: 0, to: .milliseconds(100_001))
            }
            #expect(h.engine.calls == [])
            #expect(h.log.all == [])
            #expect(await h.player.position == .seconds(10))
        }
    }
}

// MARK: - Rate and volume

@Suite struct RateVolumeTests {
    @Test func rateZeroPausesAndKeepsTheRate() async throws {
        try await withHarness { h in
            await h.player.open(makeItems(2))
            await h.ready(.seconds(100))
            try await h.player.setRate(1.5)
            h.reset()

            try await h.player.setRate(0)
            #expect(h.engine.calls == [.pause])
            #expect(h.log.states.count == 1)
            #expect(h.log.lastState?.status == .paused)
            #expect(h.log.lastState?.rate == 1.5)
            #expect(h.engine.rate == 1.5)
        }
    }

    @Test func rateIsClamped() async throws {
        try await withHarness { h in
            await h.player.open(makeItems(2))
            await h.ready(.seconds(100))
            h.reset()

            try await h.player.setRate(0.25)
            #expect(h.engine.calls == [.setRate(0.5)])
            #expect(h.log.lastState?.rate == 0.5)

            try await h.player.setRate(10)
            #expect(h.engine.calls == [.setRate(0.5), .setRate(3.0)])
            #expect(h.log.lastState?.rate == 3.0)

            try await h.player.setRate(-2)
            #expect(h.engine.calls == [.setRate(0.5), .setRate(3.0), .setRate(0.5)])
            #expect(h.log.lastState?.rate == 0.5)
            #expect(h.log.lastState?.status == .playing)

            // Same (clamped) value: nothing to do.
            h.reset()
            try await h.player.setRate(0.1)
            #expect(h.engine.calls == [])
            #expect(h.log.all == [])
        }
    }

    @Test(arguments: [Double.nan, .infinity, -.infinity])
    func nonFiniteRateIsRejected(_ value: Double) async {
        await withHarness { h in
            await h.player.open(makeItems(2))
            await h.ready(.seconds(100))
            let before = await h.player.snapshot
            h.reset()

            let error = await #expect(throws: PlayerError.self) { try await h.player.setRate(value) }
            #expect(error?.isInvalidValue == true)
            #expect(h.engine.calls == [])
            #expect(h.log.all == [])
            #expect(await h.player.snapshot == before)
        }
    }

    @Test(arguments: [Double.infinity, -.infinity, .nan])
    func nonFiniteVolumeIsRejected(_ value: Double) async {
        await withHarness { h in
            await h.player.open(makeItems(2))
            await h.ready(.seconds(100))
            let before = await h.player.snapshot
            h.reset()

            let error = await #expect(throws: PlayerError.self) { try await h.player.setVolume(value) }
            #expect(error?.isInvalidValue == true)
            #expect(h.engine.calls == [])
            #expect(h.log.all == [])
            #expect(await h.player.snapshot == before)
        }
    }

    @Test func negativeVolumeBecomesZeroAndAboveOneIsAllowed() async throws {
        try await withHarness { h in
            await h.player.open(makeItems(2))
            await h.ready(.seconds(100))
            h.reset()

            try await h.player.setVolume(-1)
            #expect(h.engine.calls == [.setVolume(0)])
            #expect(h.log.states.map(\.volume) == [0])

            try await h.player.setVolume(1.5)
            #expect(h.engine.calls == [.setVolume(0), .setVolume(1.5)])
            #expect(h.log.states.map(\.volume) == [0, 1.5])

            // Unchanged: nothing sent, nothing published.
            try await h.player.setVolume(1.5)
            #expect(h.engine.calls.count == 2)
            #expect(h.log.states.count == 2)
        }
    }
}

// MARK: - Gapless and end of stream

@Suite struct StreamEndTests {
    @Test func finishingAdvancesGaplessly() async {
        await withHarness { h in
            await h.player.open(makeItems(3))
            await h.ready(.seconds(100))
            h.engine.advance(by: .seconds(100))
            h.reset()

            let event = await h.finish()
            #expect(event == .advanced(fileURL(1)))
            #expect(h.engine.calls == [.setNext(fileURL(2))])   // no reload: the engine continued by itself
            #expect(h.log.states.count == 1)
            #expect(h.log.lastState?.currentIndex == 1)
            #expect(h.log.lastState?.status == .playing)
            #expect(h.log.lastState?.canGoPrevious == true)
            #expect(h.log.seeks == [.zero])  // where it starts, after the new track is published
            #expect(h.positionClock.anchor == .zero)
            #expect(h.positionClock.speed == 1)
        }
    }

    @Test func endOfStreamWithoutLoopStops() async {
        await withHarness { h in
            await h.player.open(makeItems(2), startAt: 1)
            await h.ready(.seconds(100))
            h.reset()

            let event = await h.finish()
            #expect(event == .endOfStream)
            #expect(h.engine.calls == [.stop])
            #expect(h.log.states.map(\.status) == [.stopped])
            #expect(h.log.seeks == [])
            #expect(await h.player.position == .zero)
        }
    }

    /// The engine wanted the next stream before the player named it (a very short file): the stream ends
    /// in the middle of the queue. Playback goes on with the next item, not a stop.
    @Test func endOfStreamInTheMiddleLoadsTheNextItem() async {
        await withHarness { h in
            await h.player.open(makeItems(3))
            await h.ready(.seconds(1))
            h.reset()

            await h.send(.endOfStream)
            #expect(h.engine.calls == [.load(fileURL(1), at: .zero), .setNext(fileURL(2))])
            #expect(h.log.lastState?.currentIndex == 1)
            #expect(h.log.lastState?.status == .playing)
            await h.ready(.seconds(1))
            #expect(h.engine.calls.last == .play)
        }
    }

    @Test func loopChapterContinuesWithTheSameItem() async {
        await withHarness { h in
            await h.player.open(makeItems(3))
            await h.ready(.seconds(100))
            h.reset()

            await h.player.setLoop(.chapter)
            #expect(h.engine.calls == [.setNext(fileURL(0))])
            #expect(h.log.lastState?.loop == .chapter)

            h.reset()
            let event = await h.finish()
            #expect(event == .advanced(fileURL(0)))
            let state = await h.player.snapshot
            #expect(state.currentIndex == 0)
            #expect(state.status == .playing)
            #expect(h.log.states.isEmpty)            // nothing a client sees changed…
            #expect(h.log.seeks == [.zero])          // …but the position went back to 0
            #expect(h.engine.nextURL == fileURL(0))   // and again after this pass
            #expect(h.positionClock.anchor == .zero)
        }
    }

    /// The position jumps from the end back to 0 with the same chapter id: MPRIS wants a Seeked(0)
    /// (playerctl only resets its clock on a chapter-id change).
    @Test func loopChapterRestartEmitsSeekedZero() async {
        await withHarness { h in
            await h.player.open(makeItems(3))
            await h.ready(.seconds(100))
            await h.player.setLoop(.chapter)
            h.engine.advance(by: .seconds(100))
            h.reset()

            await h.finish()
            #expect(h.log.seeks == [.zero])
        }
    }

    @Test func loopChapterWithoutGaplessReloadsTheSameItem() async {
        await withHarness { h in
            await h.player.open(makeItems(3))
            await h.ready(.seconds(100))
            await h.player.setLoop(.chapter)
            h.reset()

            await h.send(.endOfStream)
            #expect(h.engine.calls == [.load(fileURL(0), at: .zero), .setNext(fileURL(0))])
            let state = await h.player.snapshot
            #expect(state.currentIndex == 0)
            #expect(state.status == .playing)
            #expect(h.log.seeks == [.zero])
            await h.ready(.seconds(100))
            #expect(h.engine.calls.last == .play)
        }
    }

    @Test func loopQueueContinuesWithTheFirstItem() async {
        await withHarness { h in
            await h.player.open(makeItems(2), startAt: 1)
            await h.ready(.seconds(100))
            await h.player.setLoop(.queue)
            h.reset()

            let event = await h.finish()
            #expect(event == .advanced(fileURL(0)))
            #expect(h.log.lastState?.currentIndex == 0)
            #expect(h.engine.calls == [.setNext(fileURL(1))])
        }
    }

    @Test func unexpectedAdvanceIsIgnored() async {
        await withHarness { h in
            await h.player.open(makeItems(3))
            await h.ready(.seconds(100))
            h.reset()
            await h.send(.advanced(URL(filePath: "/elsewhere.mp3")))
            #expect(h.log.all.isEmpty)
            #expect(await h.player.snapshot.currentIndex == 0)
            #expect(h.engine.calls == [])
        }
    }

    /// The engine takes the next file a moment before the end ("about-to-finish"); a change of the next one after
    /// that (here loop chapter) comes too late, and the engine plays the file it took: the player follows it.
    @Test func aNextFileTakenBeforeItWasChangedIsFollowed() async {
        await withHarness { h in
            await h.player.open(makeItems(3))
            await h.ready(.seconds(100))
            #expect(h.engine.nextURL == fileURL(1))
            await h.player.setLoop(.chapter)
            #expect(h.engine.nextURL == fileURL(0))
            h.reset()

            await h.send(.advanced(fileURL(1)))
            #expect(await h.player.snapshot.currentIndex == 1)
            #expect(h.log.lastState?.currentIndex == 1)
            #expect(h.engine.nextURL == fileURL(1), "loop chapter: the file it now plays, again")
        }
    }

    /// Run from every start index: a shuffle that moved the current item would pass by luck 1 time in 6.
    @Test(arguments: 0..<6)
    func shuffleKeepsTheCurrentItemAndPlaysEachItemOnce(start: Int) async {
        await withHarness { h in
            let count = 6
            await h.player.open(makeItems(count), startAt: start)
            await h.ready(.seconds(100))
            h.reset()

            await h.player.setShuffle(true)
            #expect(h.log.states.count == 1)
            #expect(h.log.lastState?.shuffle == true)
            #expect(h.log.lastState?.currentIndex == start)
            #expect(!h.engine.calls.contains(where: { if case .load = $0 { true } else { false } }))
            #expect(h.engine.currentURL == fileURL(start))
            #expect(h.engine.nextURL != nil && h.engine.nextURL != fileURL(start))

            await playsEachItemOnce(h, count: count, first: start)
        }
    }

    /// Shuffle already on when a queue is opened: the requested item comes first, then each other one once.
    @Test(arguments: 0..<6)
    func openWithShuffleOnStartsWithTheRequestedItem(start: Int) async {
        await withHarness { h in
            let count = 6
            await h.player.setShuffle(true)
            h.reset()
            await h.player.open(makeItems(count), startAt: start)
            #expect(h.engine.calls.first == .load(fileURL(start), at: .zero))
            #expect(h.log.lastState?.currentIndex == start)
            await h.ready(.seconds(100))
            await playsEachItemOnce(h, count: count, first: start)
        }
    }

    /// Finishes streams until the queue ends; every item must be current exactly once, the engine's stream
    /// always matching the player's current item, and no reload on the way.
    private func playsEachItemOnce(_ h: Harness, count: Int, first: Int,
                                   sourceLocation: SourceLocation = #_sourceLocation) async {
        h.engine.clearCalls()
        var played = [first]
        for _ in 1..<count {
            let event = await h.finish(sourceLocation: sourceLocation)
            guard case .advanced(let url) = event else {
                Issue.record("ended after \(played.count) items: \(played)", sourceLocation: sourceLocation)
                return
            }
            guard let index = await h.player.snapshot.currentIndex else {
                Issue.record("no current item after \(event)", sourceLocation: sourceLocation)
                return
            }
            #expect(url == fileURL(index), sourceLocation: sourceLocation)
            played.append(index)
        }
        #expect(played.count == count, sourceLocation: sourceLocation)
        #expect(Set(played) == Set(0..<count), "play order \(played)", sourceLocation: sourceLocation)
        #expect(await h.player.canGoNext == false, sourceLocation: sourceLocation)

        let last = await h.finish(sourceLocation: sourceLocation)
        #expect(last == .endOfStream, sourceLocation: sourceLocation)
        #expect(h.log.lastState?.status == .stopped, sourceLocation: sourceLocation)
        #expect(!h.engine.calls.contains(where: { if case .load = $0 { true } else { false } }),
                sourceLocation: sourceLocation)
    }

    @Test func shuffleOffKeepsTheCurrentItemAndQueueOrder() async throws {
        try await withHarness { h in
            await h.player.open(makeItems(5), startAt: 1)
            await h.ready(.seconds(100))
            await h.player.setShuffle(true)
            await h.finish()
            let current = try #require(await h.player.snapshot.currentIndex)
            h.reset()

            await h.player.setShuffle(false)
            #expect(h.log.lastState?.currentIndex == current)
            #expect(h.log.lastState?.shuffle == false)
            let expectedNext = current + 1 < 5 ? fileURL(current + 1) : nil
            #expect(h.engine.calls == [.setNext(expectedNext)])
        }
    }
}

// MARK: - Errors and metadata

@Suite struct EngineEventTests {
    @Test func aFailureGoesOnWithTheNextFileAndTheLastOneStops() async {
        await withHarness { h in
            await h.player.open(makeItems(2))
            await h.ready(.seconds(100))
            h.engine.advance(by: .seconds(30))
            let first = await h.player.snapshot.queue[0]
            h.reset()

            await h.send(.failed("decoder exploded"))
            #expect(h.log.all.first == .itemFailed(first, index: 0, message: "decoder exploded"))
            #expect(h.engine.calls == [.load(fileURL(1), at: .zero), .setNext(nil)])
            #expect(h.log.lastState?.status == .playing)
            #expect(h.log.lastState?.currentIndex == 1)
            #expect(h.log.lastState?.lastError == "decoder exploded")

            // The last file fails too: stopped, nothing else to try.
            h.reset()
            await h.send(.failed("truncated"))
            #expect(h.engine.calls == [])
            #expect(h.log.lastState?.status == .stopped)
            #expect(h.log.lastState?.lastError == "truncated")
            #expect(h.positionClock == PositionClock(anchor: .zero, at: h.positionClock.anchoredAt, speed: 0))

            // The next load clears it.
            h.reset()
            await h.player.play()
            #expect(h.engine.calls == [.load(fileURL(1), at: .zero), .setNext(nil)])
            #expect(h.log.lastState?.lastError == nil)
            #expect(h.log.lastState?.status == .playing)
        }
    }

    @Test func aFailureWhilePausedKeepsThePlaceAndPlayTriesTheFileAgain() async {
        await withHarness { h in
            await h.player.open(makeItems(3), startAt: 1)
            await h.ready(.seconds(100))
            h.engine.advance(by: .seconds(42))
            await h.player.pause()
            let paused = await h.player.snapshot.queue[1]
            h.reset()

            // The paused file is gone (a disk unmounted): the place stays, nothing else is loaded.
            await h.send(.failed("Resource not found."))
            #expect(h.log.all.first == .itemFailed(paused, index: 1, message: "Resource not found."))
            #expect(h.engine.calls == [.stop])
            #expect(h.log.lastState?.status == .paused)
            #expect(h.log.lastState?.currentIndex == 1)
            #expect(h.log.lastState?.lastError == "Resource not found.")
            #expect(await h.player.position == .seconds(42))

            // Play tries the same file at the same place; failing again while playing, it goes on.
            h.reset()
            await h.player.play()
            #expect(h.engine.calls.first == .load(fileURL(1), at: .seconds(42)))
            await h.send(.failed("Resource not found."))
            #expect(h.engine.calls.contains(.load(fileURL(2), at: .zero)))
            #expect(h.log.lastState?.currentIndex == 2)
            #expect(h.log.lastState?.status == .playing)
        }
    }

    @Test func withLoopQueueEveryFileIsTriedOnceThenItStops() async {
        await withHarness { h in
            await h.player.open(makeItems(3), startAt: 1, settings: PlaybackSettings(loop: .queue))
            for _ in 0..<3 { await h.send(.failed("not audio")) }
            let loads = h.engine.calls.compactMap { if case .load(let url, _) = $0 { url } else { nil } }
            #expect(loads == [fileURL(1), fileURL(2), fileURL(0)])
            #expect(h.log.lastState?.status == .stopped)
        }
    }

    @Test func updateItemChangesMetadataAndPublishes() async throws {
        try await withHarness { h in
            await h.player.open(makeItems(3))
            var item = await h.player.snapshot.queue[1]
            h.reset()

            item.title = "Chapter Two"
            item.artists = ["Someone"]
            item.url = URL(filePath: "/ignored.mp3")
            await h.player.updateItem(item)
            #expect(h.log.states.count == 1)
            let published = try #require(h.log.lastState)
            #expect(published.queue[1].title == "Chapter Two")
            #expect(published.queue[1].artists == ["Someone"])
            #expect(published.queue[1].url == fileURL(1))   // the URL is not the caller's to change
            #expect(published.queue[1].duration == .seconds(100))
            #expect(published.queue[0].title == "Part 0")
            #expect(h.engine.calls == [])

            // Unchanged, or an id not in the queue: nothing.
            h.reset()
            await h.player.updateItem(item)
            await h.player.updateItem(MediaItem(id: 9999, url: fileURL(9), title: "Stranger"))
            #expect(h.log.all == [])
        }
    }

    @Test func durationChangedUpdatesTheCurrentItem() async {
        await withHarness { h in
            await h.player.open(makeItems(3, duration: nil), startAt: 1)
            await h.ready(nil)
            #expect(h.log.lastState?.current?.duration == nil)
            h.reset()

            await h.send(.durationChanged(.seconds(250)))
            #expect(h.log.states.count == 1)
            #expect(h.log.lastState?.queue.map(\.duration) == [nil, .seconds(250), nil])
            #expect(h.log.seeks == [])
        }
    }
}

// MARK: - Position clock

@Suite struct PositionClockTests {
    @Test func waitsForTheOutputRunsAtTheRateWhilePlayingAndFreezesWhilePaused() async throws {
        try await withHarness { h in
            await h.player.open(makeItems(2), position: .seconds(10))
            // Before the engine is ready the clock does not run.
            var clock = h.positionClock
            #expect(clock.anchor == .seconds(10))
            #expect(clock.speed == 0)
            #expect(h.player.view.position(at: clock.anchoredAt + .seconds(5)) == .seconds(10))

            // Ready, playing: it stands until the output plays from there, then runs from where the engine is.
            await h.ready(.seconds(100))
            #expect(h.positionClock.speed == 0)
            await h.outputPlays(for: .milliseconds(100))
            clock = h.positionClock
            #expect(clock.anchor == .milliseconds(10_100))
            #expect(clock.speed == 1)
            #expect(h.player.view.position(at: clock.anchoredAt + .seconds(4)) == .milliseconds(14_100))

            // A new speed: the engine seeks to change it, and the clock waits for its output again.
            try await h.player.setRate(1.5)
            #expect(h.positionClock.speed == 0)
            #expect(h.positionClock.anchor == .milliseconds(10_100))
            await h.outputPlays(for: .milliseconds(100))   // 10.1 s + 0.1 s × 1.5
            clock = h.positionClock
            #expect(clock.speed == 1.5)
            #expect(clock.anchor == .milliseconds(10_250))
            #expect(h.player.view.position(at: clock.anchoredAt + .seconds(4)) == clock.anchor + .seconds(6))

            h.engine.advance(by: .seconds(4))   // 10.25 s + 4 s × 1.5
            await h.player.pause()
            clock = h.positionClock
            #expect(clock.anchor == .milliseconds(16_250))
            #expect(clock.speed == 0)
            #expect(h.player.view.position(at: clock.anchoredAt + .seconds(60)) == .milliseconds(16_250))
            #expect(await h.player.position == .milliseconds(16_250))

            await h.player.play()
            #expect(h.positionClock.anchor == .milliseconds(16_250))
            await h.outputPlays(for: .seconds(2))
            clock = h.positionClock
            #expect(clock.anchor == .milliseconds(19_250))
            #expect(clock.speed == 1.5)
        }
    }

    /// MPRIS's rule: the position moves only at Rate, or with a Seeked. An output that takes its time to start, or
    /// stops to fill its buffer, or an engine that still answers from before a seek, never moves it back.
    @Test func theClockNeverStepsBackAndTellsWhereItIsAfterALateStart() async {
        await withHarness { h in
            await h.player.open(makeItems(2))
            await h.ready(.seconds(100))
            await h.outputPlays(for: .seconds(20))
            guard let queue = await h.player.snapshot.queueID else { Issue.record("no queue after open"); return }
            h.reset()

            // SetPosition, then a relative seek before the output plays from there, the engine still answering from
            // before: the seek counts from the place the first one went to.
            await h.player.setPosition(queue: queue, chapter: 0, to: .seconds(30))
            h.engine.answer(.milliseconds(20_100))
            await h.player.seek(by: .seconds(5))
            #expect(h.log.seeks == [.seconds(30), .seconds(35)])
            #expect(h.positionClock.anchor == .seconds(35) && h.positionClock.speed == 0)
            h.engine.answer(.milliseconds(20_200))
            await h.player.tick()
            #expect(h.positionClock.anchor == .seconds(35), "the clock followed an answer from before the seek")

            // The output starts 300 ms after the seek (a sink filling its buffer): clients reckoned from the seek, and
            // are told where it is once it plays.
            h.reset()
            h.engine.answer(.seconds(35))
            await waitUntil("the wake-up to sleep") { h.tickClock.hasSleeper(tolerance: Player.wakeTolerance) }
            h.tickClock.advance(by: .milliseconds(300))
            await h.settle()
            #expect(h.positionClock.speed == 0)
            await h.outputPlays()
            #expect(h.positionClock.anchor == .milliseconds(35_040))
            #expect(h.log.seeks == [.milliseconds(35_040)])

            // The engine stops to fill its buffer: the clock, ahead of it, stands until it catches up, and then says
            // where it is.
            h.reset()
            h.tickClock.advance(by: .milliseconds(500))
            await h.settle()
            await h.player.tick()
            #expect(h.positionClock.speed == 0)
            #expect(h.positionClock.anchor == .milliseconds(35_540))
            #expect(await h.player.position == .milliseconds(35_540))
            #expect(h.log.seeks == [])
            await h.outputPlays(for: .milliseconds(600))
            #expect(h.log.seeks == [.milliseconds(35_640)])
            #expect(h.positionClock.anchor == .milliseconds(35_640))
        }
    }

    /// One 100 s file, ready and playing from its start, the calls and events so far forgotten.
    private static func playingOneFile(_ h: Harness) async {
        await h.player.open(makeItems(1))
        await h.ready(.seconds(100))
        await h.outputPlays()
        h.reset()
    }

    /// An output whose clock runs a little fast (pulsesink catching up after its start): each step ahead is small,
    /// but clients reckoning from the last Seeked are told once they add up past the allowance.
    @Test func smallStepsAheadThatAddUpAreTold() async {
        await withHarness { h in
            await Self.playingOneFile(h)
            for step in 1...3 {
                h.engine.advance(by: .milliseconds(530))
                h.tickClock.advance(by: .milliseconds(500))
                await h.settle()
                await h.player.tick()
                #expect(h.log.seeks.count == (step < 3 ? 0 : 1), "step \(step): \(h.log.seeks)")
            }
            #expect(h.log.seeks.first == .milliseconds(1_630))
        }
    }

    /// Around a gapless handover, and after skipped silence, pulsesink can answer past the file's end (24 s of a 12 s
    /// file): the position stays within the file, and so does what Seeked says.
    @Test func anAnswerPastTheFilesEndIsItsEnd() async {
        await withHarness { h in
            await Self.playingOneFile(h)
            h.engine.answer(.seconds(150))
            await h.player.tick()
            #expect(h.positionClock.anchor == .seconds(100))
            #expect(await h.player.position == .seconds(100))
            #expect(h.log.seeks == [.seconds(100)])
        }
    }

    @Test func seekWhilePausedKeepsTheClockFrozen() async {
        await withHarness { h in
            await h.player.open(makeItems(2), play: false)
            await h.ready(.seconds(100))
            await h.player.seek(by: .seconds(30))
            let clock = h.positionClock
            #expect(clock.anchor == .seconds(30))
            #expect(clock.speed == 0)
            #expect(h.log.seeks == [.zero, .seconds(30)])
        }
    }

    @Test func theTickLoopHasATimerOnlyWhilePlaying() async {
        await withHarness { h in
            // One file: no wake-up is planned for its end (there is no next file to hand over to).
            await h.player.open(makeItems(1), play: false)
            await h.ready(.seconds(100))
            await h.player.play()
            await h.outputPlaysAndPollsEnd()
            await h.player.pause()
            h.tickClock.advance(by: .seconds(1))  // the tick after the pause: the last one
            await waitUntil("the last tick to run") { h.tickClock.sleeperCount == 0 }
            for _ in 0..<5 {
                // Time for a loop that sleeps again (as it did, paused or not) to be seen doing so.
                try? await Task.sleep(for: .milliseconds(20))
                #expect(h.tickClock.sleeperCount == 0, "a timer while paused")
            }
            await h.player.play()
            await h.outputPlaysAndPollsEnd()
        }
    }

    @Test func eachTickWhilePlayingReanchorsTheClockAndTellsWhereItIs() async {
        await withHarness { h in
            await h.player.open(makeItems(1))  // one file: the tick loop is the only sleeper once the output plays
            await h.ready(.seconds(100))
            #expect(h.positionClock.anchor == .zero)
            await h.outputPlaysAndPollsEnd()
            let opened = h.log.all.count  // open (ready changed nothing a client sees)

            h.engine.advance(by: Player.tickInterval + .milliseconds(30))  // a little ahead of the clock's reckoning
            let heard = h.engine.position ?? .zero
            h.tickClock.advance(by: Player.tickInterval)
            await waitUntil("the tick to re-anchor the clock") { h.positionClock.anchor == heard }
            #expect(h.positionClock.speed == 1)
            await waitUntil("the tick to say where it is") { h.log.all.count == opened + 1 }
            // A tick publishes no state: it says which item plays, and where (the clock's position, just re-anchored).
            guard case .playing(let item, let at) = h.log.all.last else {
                Issue.record("a tick while playing sent \(String(describing: h.log.all.last))")
                return
            }
            #expect(item == (await h.player.snapshot.current))
            #expect(at >= heard && at < heard + .seconds(1))

            await h.player.pause()
            let paused = h.log.all.count
            await h.player.tick()
            #expect(h.log.all.count == paused, "a tick while paused said something: \(h.log.all.suffix(1))")
        }
    }
}

// MARK: - Invariants across a whole session

@Suite struct InvariantTests {
    /// A seek while stopped is reported with `seeked(45 s)`, but the following Play starts at 0 without
    /// telling anyone: clients (playerctl, Plasma) then show 45 s while the audio is at 0.
    @Test func positionAfterPlayAgreesWithTheLastSeekedWhileStopped() async {
        await withHarness { h in
            await h.player.open(makeItems(2))
            await h.ready(.seconds(100))
            await h.player.stop()
            h.reset()

            await h.player.seek(by: .seconds(45))
            await h.player.play()
            await h.ready(.seconds(100))
            let reported = h.log.seeks.last ?? .zero
            let position = await h.player.position
            #expect(position == reported)
        }
    }

    /// `PlayerEvent.stateChanged` is documented as "something in the snapshot changed".
    @Test func stateChangedIsOnlyPublishedForARealChange() async throws {
        try await withHarness { h in
            await h.player.open(makeItems(3))            // durations known from the tags
            await h.ready(.seconds(100))                 // same duration, status already Playing
            await h.send(.durationChanged(.seconds(100)))
            await h.player.pause()
            await h.player.next()
            await h.ready(.seconds(100))
            try await h.player.setVolume(0.5)
            await h.player.setLoop(.queue)

            let states = h.log.states
            let repeats = zip(states, states.dropFirst()).filter { $0 == $1 }.count
            #expect(repeats == 0)
            #expect(states.count >= 5)
        }
    }
}
