import Foundation
import LecternCore
import Testing

// The player as a listener of books uses it: chapters are chapters, skips cross files, the sleep timer,
// smart rewind, shuffle kept per book, the end of the book. Fake engine, manual clock.

/// Three 100 s files; the second has chapters at 0, 30 and 60 s ("B1", "B2", "B3").
func chapteredItems() -> [MediaItem] {
    var items = makeItems(3)
    items[1].chapters = [ChapterMark(title: "B2", start: .seconds(30)), ChapterMark(title: "B1", start: .seconds(5)),
                         ChapterMark(title: "B3", start: .seconds(60)), ChapterMark(title: "past the end", start: .seconds(200))]
    return items
}

extension Harness {
    /// Plays for `duration` of manual time in small steps, letting the player's wake-ups run in between.
    func play(for duration: Duration, step: Duration = .milliseconds(250)) async {
        var left = duration
        while left > .zero {
            // Playing, the tick loop sleeps from the moment it goes to sleep: a move before that would be lost to it.
            if player.view.state.status == .playing {
                await waitUntil("the tick asleep") { tickClock.hasSleeper(tolerance: Player.tickTolerance) }
            }
            let now = min(step, left)
            engine.advance(by: now)
            tickClock.advance(by: now)
            left -= now
            try? await Task.sleep(for: .milliseconds(1))
            await settle()
        }
    }

    func openChaptered(startAt: Int = 0, position: Duration = .zero, play: Bool = true) async {
        await player.open(chapteredItems(), startAt: startAt, position: position, play: play)
        await ready(.seconds(100))
    }
}

func withHarness(options: ListeningOptions, _ body: (Harness) async throws -> Void) async rethrows {
    let engine = FakeEngine()
    let log = EventLog()
    let tickClock = ManualClock()
    let player = Player(engine: engine, tickClock: tickClock, options: options, observers: [log])
    let run = Task { await player.run() }
    defer { run.cancel() }
    try await body(Harness(engine: engine, player: player, log: log, tickClock: tickClock))
    run.cancel()
    await run.value
}

@Suite struct TrackLayoutTests {
    @Test func chaptersBecomeTracksInQueueOrder() {
        let chapters = Chapter.chapters(of: chapteredItems())
        #expect(chapters.map(\.title) == ["Part 0", "B1", "B2", "B3", "Part 2"])
        #expect(chapters.map(\.itemIndex) == [0, 1, 1, 1, 2])
        // The first chapter of a file starts at 0 (its mark said 5 s); the mark past the end is dropped.
        #expect(chapters.map(\.start) == [.zero, .zero, .seconds(30), .seconds(60), .zero])
        #expect(chapters.map(\.end) == [.seconds(100), .seconds(30), .seconds(60), .seconds(100), .seconds(100)])
    }

    @Test func aFileOfUnknownDurationIsOneOpenEndedTrack() {
        let chapters = Chapter.chapters(of: makeItems(1, duration: nil))
        #expect(chapters.count == 1)
        #expect(chapters[0].end == nil)
        #expect(chapters[0].length == nil)
    }
}

@Suite struct ChapterNavigationTests {
    @Test func nextWithinAFileSeeksToTheChapterStartAndSaysSo() async {
        await withHarness { h in
            await h.openChaptered(startAt: 1, position: .seconds(10))
            #expect(await h.player.snapshot.currentChapter == 1)
            h.reset()

            await h.player.next()
            #expect(h.engine.calls == [.seek(.seconds(30))])
            #expect(h.log.lastState?.currentChapter == 2)
            #expect(h.log.lastState?.chapter?.title == "B2")
            // Landing at the chapter's start, Seeked says 0 after the new chapter is published: a client that sees no
            // change between object-path trackids (KDE Plasma's engine) would keep the previous chapter's place.
            #expect(h.log.seeks == [.zero])
            let events = h.log.all
            let seeked = events.lastIndex { if case .seeked = $0 { true } else { false } }
            let changed = events.lastIndex { if case .stateChanged = $0 { true } else { false } }
            #expect(seeked != nil && changed != nil && changed! < seeked!, "\(events)")
            #expect(await h.player.progress?.chapterPosition == .zero)
        }
    }

    @Test func nextFromTheLastChapterLoadsTheNextFile() async {
        await withHarness { h in
            await h.openChaptered(startAt: 1, position: .seconds(70))
            h.reset()
            await h.player.next()
            #expect(h.engine.calls == [.load(fileURL(2), at: .zero), .setNext(nil)])
            #expect(h.log.lastState?.currentChapter == 4)
            #expect(h.log.seeks == [.zero])
        }
    }

    @Test func previousLateInAChapterRestartsItAndEarlyGoesBack() async {
        await withHarness { h in
            await h.openChaptered(startAt: 1, position: .seconds(40))
            h.reset()

            // 10 s into B2: back to its start, Seeked(0) (the trackid doesn't change).
            await h.player.previous()
            #expect(h.engine.calls == [.seek(.seconds(30))])
            #expect(h.log.seeks == [.zero])
            #expect(h.log.lastState?.currentChapter == 2 || h.log.states.isEmpty)

            // At its start: to B1.
            h.reset()
            await h.player.previous()
            #expect(h.engine.calls == [.seek(.zero)])
            #expect(h.log.lastState?.currentChapter == 1)

            // From B1's start: the previous file's last (only) chapter, loaded at its start.
            h.reset()
            await h.player.previous()
            #expect(h.engine.calls == [.load(fileURL(0), at: .zero), .setNext(fileURL(1))])
            #expect(h.log.lastState?.currentChapter == 0)
        }
    }

    @Test func previousIntoAFileOfChaptersGoesToItsLastChapter() async {
        await withHarness { h in
            await h.openChaptered(startAt: 2)
            h.reset()
            await h.player.previous()
            #expect(h.engine.calls == [.load(fileURL(1), at: .seconds(60)), .setNext(fileURL(2))])
            #expect(h.log.lastState?.currentChapter == 3)
            #expect(h.log.seeks == [.zero])  // at the chapter's start
        }
    }

    @Test func playingAcrossAChapterBoundaryChangesTheTrack() async {
        await withHarness { h in
            await h.openChaptered(startAt: 1, position: .seconds(28))
            #expect(await h.player.snapshot.currentChapter == 1)
            await h.play(for: .seconds(3))
            #expect(h.log.lastState?.currentChapter == 2)
            #expect(h.log.seeks == [.seconds(28), .zero])  // the opening one, and the new chapter's start
            let progress = await h.player.progress
            #expect(progress?.chapterIndex == 2)
            #expect(progress?.chapterPosition == .seconds(1))
        }
    }

    @Test func goToAndJumpValidateAndMove() async throws {
        try await withHarness { h in
            await h.openChaptered()
            h.reset()
            try await h.player.goTo(chapter: 3)
            #expect(h.engine.calls == [.load(fileURL(1), at: .seconds(60)), .setNext(fileURL(2))])
            #expect(h.log.lastState?.currentChapter == 3)
            await h.ready(.seconds(100))

            h.reset()
            try await h.player.jump(toFile: 2, at: .seconds(42))
            #expect(h.engine.calls == [.load(fileURL(2), at: .seconds(42)), .setNext(nil)])
            #expect(h.log.seeks == [.seconds(42)])
            await h.ready(.seconds(100))

            h.reset()
            await #expect(throws: PlayerError.self) { try await h.player.goTo(chapter: 5) }
            await #expect(throws: PlayerError.self) { try await h.player.jump(toFile: 3, at: .zero) }
            await #expect(throws: PlayerError.self) { try await h.player.jump(toFile: 0, at: .seconds(101)) }
            await #expect(throws: PlayerError.self) { try await h.player.jump(toFile: 0, at: .seconds(-1)) }
            #expect(h.engine.calls == [])
            #expect(h.log.all == [])
        }
    }

    @Test func mprisSeekPastTheChapterEndGoesToTheNextChapter() async {
        await withHarness { h in
            await h.openChaptered(startAt: 1, position: .seconds(50))
            h.reset()
            await h.player.seek(by: .seconds(15))
            #expect(h.engine.calls == [.seek(.seconds(60))])
            #expect(h.log.lastState?.currentChapter == 3)
        }
    }
}

@Suite struct SkipTests {
    @Test func skipForwardCrossesIntoTheNextFile() async {
        await withHarness { h in
            await h.player.open(makeItems(3))
            await h.ready(.seconds(100))
            h.engine.advance(by: .seconds(95))
            h.reset()

            await h.player.skip(by: .seconds(15))
            #expect(h.engine.calls == [.load(fileURL(1), at: .seconds(10)), .setNext(fileURL(2))])
            #expect(h.log.lastState?.currentIndex == 1)
            #expect(h.log.seeks == [.seconds(10)])
        }
    }

    @Test func skipBackCrossesIntoThePreviousFileAndClampsAtTheStart() async {
        await withHarness { h in
            await h.player.open(makeItems(3), startAt: 1, position: .seconds(5))
            await h.ready(.seconds(100))
            h.reset()

            await h.player.skip(by: .seconds(-15))
            #expect(h.engine.calls == [.load(fileURL(0), at: .seconds(90)), .setNext(fileURL(1))])
            #expect(h.log.seeks == [.seconds(90)])
            await h.ready(.seconds(100))

            h.reset()
            await h.player.skip(by: .seconds(-1000))
            #expect(h.engine.calls == [.seek(.zero)])
            #expect(h.log.seeks == [.zero])
        }
    }

    @Test func skipWithinAFileSeeksAndAnnounces() async {
        await withHarness { h in
            await h.openChaptered(startAt: 1, position: .seconds(20))
            h.reset()
            await h.player.skip(by: .seconds(15))
            #expect(h.engine.calls == [.seek(.seconds(35))])
            #expect(h.log.lastState?.currentChapter == 2)
            #expect(h.log.seeks == [.seconds(5)])  // within B2, which starts at 30 s
        }
    }

    @Test func skipPastTheEndFinishesTheBook() async {
        await withHarness { h in
            await h.player.open(makeItems(2), startAt: 1, position: .seconds(90))
            await h.ready(.seconds(100))
            h.reset()
            await h.player.skip(by: .seconds(15))
            #expect(h.engine.calls == [.stop])
            #expect(h.log.lastState?.status == .stopped)
            #expect(h.log.all.contains(.finished))
        }
    }

    @Test func skipIsIgnoredWhileStopped() async {
        await withHarness { h in
            await h.player.open(makeItems(2))
            await h.ready(.seconds(100))
            await h.player.stop()
            h.reset()
            await h.player.skip(by: .seconds(15))
            #expect(h.engine.calls == [])
            #expect(h.log.all == [])
        }
    }
}

@Suite struct ProgressTests {
    @Test func bookFiguresAtTheCurrentRate() async throws {
        try await withHarness { h in
            await h.openChaptered(startAt: 1, position: .seconds(40))
            try await h.player.setRate(2)
            let progress = try #require(await h.player.progress)
            #expect(progress.fileIndex == 1)
            #expect(progress.fileCount == 3)
            #expect(progress.chapterIndex == 2)
            #expect(progress.chapterCount == 5)
            #expect(progress.chapterTitle == "B2")
            #expect(progress.chapterPosition == .seconds(10))
            #expect(progress.chapterLength == .seconds(30))
            #expect(progress.bookPosition == .seconds(140))
            #expect(progress.bookLength == .seconds(300))
            #expect(progress.remaining == .seconds(80))  // 160 s of book at 2x
        }
    }

    /// Shuffled, the book position still counts in book order (a listener can follow it), and the time left is what
    /// is still to hear in play order.
    @Test func shuffledTheBookPositionIsInBookOrderAndTheTimeLeftInPlayOrder() async throws {
        try await withHarness { h in
            // Files of 100, 200 and 300 s; played in the order 3, 1, 2; now 50 s into file 1 (the second played).
            let items = [100, 200, 300].enumerated().map { n, seconds in
                MediaItem(id: 0, url: fileURL(n), duration: .seconds(seconds))
            }
            await h.player.open(items, startAt: 0, position: .seconds(50), play: false,
                                settings: PlaybackSettings(shuffle: true), shuffleOrder: [2, 0, 1])
            let state = await h.player.snapshot
            try #require(state.shuffleOrder == [2, 0, 1], "the kept order: \(String(describing: state.shuffleOrder))")
            let progress = try #require(await h.player.progress)
            #expect(progress.fileIndex == 0)
            #expect(progress.bookPosition == .seconds(50), "file 1 at 0:50 is 0:50 into the book")
            #expect(progress.bookLength == .seconds(600))
            #expect(progress.remaining == .seconds(250), "the rest of file 1, then file 2; file 3 was played")
        }
    }
}

@Suite struct FinishedTests {
    @Test func reachingTheEndStopsAndSaysFinished() async {
        await withHarness { h in
            await h.player.open(makeItems(2), startAt: 1)
            await h.ready(.seconds(100))
            h.reset()
            await h.finish()
            #expect(h.log.all.last == .finished)
            #expect(h.log.lastState?.status == .stopped)
        }
    }

    @Test func theEndWithLoopQueueIsNotFinished() async {
        await withHarness { h in
            await h.player.open(makeItems(2), startAt: 1)
            await h.player.setLoop(.queue)
            await h.ready(.seconds(100))
            h.reset()
            await h.finish()
            #expect(!h.log.all.contains(.finished))
            #expect(h.log.lastState?.currentIndex == 0)
        }
    }
}

@Suite struct LoopChapterTests {
    @Test func loopChapterRepeatsAChapterInsideAFile() async {
        await withHarness { h in
            await h.openChaptered(startAt: 1, position: .seconds(58))
            await h.player.setLoop(.chapter)
            #expect(h.engine.nextURL == nil)  // a file of chapters is looped by seeking, not by the gapless slot
            h.reset()
            await h.play(for: .seconds(3))
            #expect(h.engine.calls.contains(.seek(.seconds(30))))
            #expect(h.log.seeks.contains(.zero))
            #expect(await h.player.snapshot.currentChapter == 2)
        }
    }

    @Test func loopChapterOfAOneChapterFileUsesTheGaplessSlot() async {
        await withHarness { h in
            await h.player.open(makeItems(2))
            await h.ready(.seconds(100))
            await h.player.setLoop(.chapter)
            #expect(h.engine.nextURL == fileURL(0))
        }
    }
}

@Suite struct ShuffleTests {
    @Test func aSavedOrderIsKeptAndANewOneStartsWithTheCurrentFile() async {
        await withHarness { h in
            let items = makeItems(6)
            await h.player.open(items, startAt: 2, settings: PlaybackSettings(shuffle: true), shuffleOrder: [5, 2, 0, 4, 1, 3])
            await h.ready(.seconds(100))
            #expect(h.log.lastState?.shuffleOrder == [5, 2, 0, 4, 1, 3])
            #expect(h.engine.nextURL == fileURL(0))  // what follows 2 in the saved order

            // Not a permutation: a new order, the current file first.
            await h.player.open(items, startAt: 4, settings: PlaybackSettings(shuffle: true), shuffleOrder: [1, 1, 2])
            let drawn = await h.player.snapshot.shuffleOrder
            #expect(drawn?.first == 4)
            #expect(drawn?.sorted() == Array(0..<6))
        }
    }

    @Test func reshuffleDrawsANewOrderAndOffForgetsIt() async {
        await withHarness { h in
            await h.player.open(makeItems(12), startAt: 3, settings: PlaybackSettings(shuffle: true))
            let first = await h.player.snapshot.shuffleOrder
            var changed = false
            for _ in 0..<5 where !changed {  // 11! orders: five equal draws in a row won't happen
                await h.player.reshuffle()
                changed = await h.player.snapshot.shuffleOrder != first
            }
            #expect(changed)
            #expect(await h.player.snapshot.shuffleOrder?.first == 3)
            await h.player.setShuffle(false)
            #expect(await h.player.snapshot.shuffleOrder == nil)
        }
    }
}

@Suite struct SmartRewindTests {
    static let options = ListeningOptions(smartRewind: SmartRewind(threshold: .seconds(60), minimum: .seconds(5),
                                                                   maximum: .seconds(25), fullAfter: .seconds(260)))

    @Test func theRewindGrowsWithThePause() {
        let rewind = Self.options.smartRewind
        #expect(rewind.rewind(after: .seconds(59)) == .zero)
        #expect(rewind.rewind(after: .seconds(60)) == .seconds(5))
        #expect(rewind.rewind(after: .seconds(160)) == .seconds(15))
        #expect(rewind.rewind(after: .seconds(260)) == .seconds(25))
        #expect(rewind.rewind(after: .seconds(100_000)) == .seconds(25))
        #expect(SmartRewind.off.rewind(after: .seconds(100_000)) == .zero)
    }

    @Test func aShortPauseResumesWhereItWas() async {
        await withHarness(options: Self.options) { h in
            await h.player.open(makeItems(2), position: .seconds(50))
            await h.ready(.seconds(100))
            await h.player.pause()
            h.tickClock.advance(by: .seconds(30))
            h.reset()
            await h.player.play()
            #expect(h.engine.calls == [.play])
            #expect(h.log.seeks == [])
        }
    }

    @Test func aLongPauseResumesEarlierAndAnnouncesIt() async {
        await withHarness(options: Self.options) { h in
            await h.player.open(makeItems(2), position: .seconds(50))
            await h.ready(.seconds(100))
            await h.player.pause()
            h.tickClock.advance(by: .seconds(160))
            h.reset()
            await h.player.play()
            #expect(h.engine.calls == [.seek(.seconds(35)), .play])
            #expect(h.log.seeks == [.seconds(35)])
            #expect(h.log.lastState?.status == .playing)
        }
    }

    @Test func aBookOpenedPausedCountsTheTimeSinceItWasLastPlayed() async {
        await withHarness(options: Self.options) { h in
            await h.player.open(makeItems(2), position: .seconds(50), play: false, pausedFor: .seconds(150))
            await h.ready(.seconds(100))
            h.tickClock.advance(by: .seconds(10))
            h.reset()
            await h.player.play()
            #expect(h.log.seeks == [.seconds(35)])  // a pause of 160 s
        }
    }

    @Test func theRewindCrossesBackIntoThePreviousFile() async {
        await withHarness(options: Self.options) { h in
            await h.player.open(makeItems(2), startAt: 1, position: .seconds(2))
            await h.ready(.seconds(100))
            await h.player.pause()
            h.tickClock.advance(by: .seconds(1000))
            h.reset()
            await h.player.play()
            #expect(h.engine.calls.first == .load(fileURL(0), at: .seconds(77)))
            #expect(h.log.seeks == [.seconds(77)])
            await h.ready(.seconds(100))
            #expect(h.engine.isPlaying)
        }
    }

    @Test func aPauseForALostOutputRewindsToo() async {
        await withHarness(options: Self.options) { h in
            await h.player.open(makeItems(2), position: .seconds(50))
            await h.ready(.seconds(100))
            await h.player.pauseForLostOutput()
            h.tickClock.advance(by: .seconds(160))
            h.reset()
            #expect(await h.player.resumeForReturnedOutput())
            #expect(h.log.seeks == [.seconds(35)])
        }
    }
}

@Suite struct SleepTimerTests {
    @Test func afterAWhileTheVolumeFadesAndPlaybackPausesWithABookmarkEvent() async throws {
        try await withHarness { h in
            await h.player.open(makeItems(2))
            await h.ready(.seconds(100))
            try await h.player.setVolume(0.8)
            try await h.player.setSleepTimer(.after(.seconds(30)))
            #expect(h.log.lastState?.sleepTimer == SleepTimerStatus(mode: .after(.seconds(30)), fading: false))
            #expect(h.player.view.sleepTimeLeft().map { $0 > .seconds(29) && $0 <= .seconds(30) } == true)

            await h.play(for: .seconds(19))
            #expect(h.engine.volume == 0.8)
            #expect(await h.player.sleepTimeLeft == .seconds(11))

            await h.play(for: .seconds(6))   // 5 s left of a 10 s fade
            #expect(h.log.lastState?.sleepTimer?.fading == true)
            #expect(h.engine.volume < 0.5 && h.engine.volume > 0.3)
            #expect(h.log.lastState?.volume == 0.8)  // clients still see the volume they set

            await h.play(for: .seconds(6))
            let state = await h.player.snapshot
            #expect(state.status == .paused)
            #expect(state.sleepTimer == nil)
            #expect(h.engine.volume == 0.8)
            #expect(!h.engine.isPlaying)
            let fired = h.log.all.compactMap { event -> Duration? in
                if case .sleepTimerFired(let item, let at) = event, item.id == state.current?.id { return at }
                return nil
            }
            #expect(fired.count == 1)
            if let at = fired.first { #expect(at >= .seconds(30) && at <= .seconds(30.5)) }
        }
    }

    @Test func theTimerRunsOnlyWhilePlaying() async throws {
        try await withHarness { h in
            await h.player.open(makeItems(2))
            await h.ready(.seconds(100))
            try await h.player.setSleepTimer(.after(.seconds(30)))
            await h.play(for: .seconds(10))
            await h.player.pause()
            h.tickClock.advance(by: .seconds(3600))
            try? await Task.sleep(for: .milliseconds(5))
            #expect(await h.player.sleepTimeLeft == .seconds(20))
            #expect(h.player.view.sleepTimeLeft() == .seconds(20), "what clients read, counted on from the pause")
            #expect(!h.log.all.contains { if case .sleepTimerFired = $0 { true } else { false } })
        }
    }

    @Test func aCommandDuringTheFadeExtendsTheTimer() async throws {
        try await withHarness { h in
            await h.player.open(makeItems(2))
            await h.ready(.seconds(100))
            try await h.player.setSleepTimer(.after(.seconds(20)))
            await h.play(for: .seconds(15))
            #expect(h.log.lastState?.sleepTimer?.fading == true)
            #expect(h.engine.volume < 1)

            await h.player.noteActivity()
            #expect(h.engine.volume == 1)
            #expect(h.log.lastState?.sleepTimer?.fading == false)
            #expect(await h.player.sleepTimeLeft == .seconds(25))  // 5 s left + another 20 s

            // A command before the fade does not extend it.
            await h.play(for: .seconds(5))
            try await h.player.setVolume(1)
            #expect(await h.player.sleepTimeLeft == .seconds(20))
        }
    }

    @Test func atTheEndOfTheChapterItStopsAtTheNextChaptersStart() async throws {
        try await withHarness { h in
            await h.openChaptered(startAt: 1, position: .seconds(15))
            try await h.player.setSleepTimer(.endOfChapter)
            #expect(await h.player.sleepTimeLeft == .seconds(15))
            await h.play(for: .seconds(4))
            #expect(h.engine.volume == 1)
            await h.play(for: .seconds(8))  // 3 s to go: fading
            #expect(h.engine.volume < 0.5)
            await h.play(for: .seconds(4))
            let state = await h.player.snapshot
            #expect(state.status == .paused)
            #expect(state.currentChapter == 2)
            #expect(h.engine.volume == 1)
            #expect(h.log.all.contains { if case .sleepTimerFired = $0 { true } else { false } })
        }
    }

    @Test func extendingAnEndOfChapterTimerWaitsForTheNextChapter() async throws {
        try await withHarness { h in
            await h.openChaptered(startAt: 1, position: .seconds(25))
            try await h.player.setSleepTimer(.endOfChapter)
            await h.play(for: .seconds(2))
            #expect(h.log.lastState?.sleepTimer?.fading == true)
            await h.player.noteActivity()
            await h.play(for: .seconds(10))  // into B2: still playing
            #expect(await h.player.snapshot.status == .playing)
            #expect(await h.player.snapshot.currentChapter == 2)
            await h.play(for: .seconds(25))  // to B3
            #expect(await h.player.snapshot.status == .paused)
            #expect(await h.player.snapshot.currentChapter == 3)
        }
    }

    @Test func cancellingRestoresTheVolumeAndInvalidDurationsAreRefused() async throws {
        try await withHarness { h in
            await h.player.open(makeItems(2))
            await h.ready(.seconds(100))
            try await h.player.setSleepTimer(.after(.seconds(12)))
            await h.play(for: .seconds(5))
            #expect(h.engine.volume < 1)
            try await h.player.setSleepTimer(nil)
            #expect(h.engine.volume == 1)
            #expect(h.log.lastState?.sleepTimer == nil)
            await #expect(throws: PlayerError.self) { try await h.player.setSleepTimer(.after(.zero)) }
            await h.play(for: .seconds(20))
            #expect(await h.player.snapshot.status == .playing)
        }
    }
}

@Suite struct OutputFailureTests {
    @Test func anOutputFailurePausesWhereItWasAndTheReturnReloadsThere() async {
        await withHarness { h in
            await h.player.open(makeItems(2), startAt: 1, position: .seconds(40))
            await h.ready(.seconds(100))
            await h.play(for: .seconds(2))
            h.reset()

            await h.player.handle(.outputFailed("Connection terminated"))
            let state = await h.player.snapshot
            #expect(state.status == .paused)
            #expect(state.currentIndex == 1)
            #expect(await h.player.position == .seconds(42))
            #expect(await h.player.isPausedForLostOutput)
            #expect(state.lastError == "Connection terminated")

            // The output is back: the file is loaded again at the same place, and plays once ready.
            #expect(await h.player.resumeForReturnedOutput())
            #expect(h.engine.calls.first == .load(fileURL(1), at: .seconds(42)))
            await h.ready(.seconds(100))
            #expect(h.engine.isPlaying)
            #expect(h.log.lastState?.status == .playing)
        }
    }

    @Test func aStreamFailureOfTheLastFileStops() async {
        await withHarness { h in
            await h.player.open(makeItems(2), startAt: 1)
            await h.ready(.seconds(100))
            await h.player.handle(.failed("not an audio file"))
            #expect(h.log.lastState?.status == .stopped)
            #expect(h.log.lastState?.lastError == "not an audio file")
            #expect(await !h.player.isPausedForLostOutput)
        }
    }
}

@Suite struct NextFileFailureTests {
    @Test func aBadNextFileIsSkippedAndTheCurrentOnePlaysOnToItsEnd() async {
        await withHarness { h in
            await h.player.open(makeItems(3))
            await h.ready(.seconds(100))
            h.engine.advance(by: .seconds(98))
            let bad = await h.player.snapshot.queue[1]
            await h.settle()
            h.reset()

            await h.send(.nextFailed(fileURL(1), "Could not determine type of stream."))
            #expect(h.log.all.first == .itemFailed(bad, index: 1, message: "Could not determine type of stream."))
            // The current file is not touched: it plays on (the engine was not stopped).
            #expect(!h.engine.calls.contains { if case .load = $0 { true } else { false } }, "\(h.engine.calls)")
            #expect(h.engine.isPlaying)
            #expect(h.log.lastState?.currentIndex == 0)
            #expect(h.log.lastState?.status == .playing)
            #expect(h.log.lastState?.lastError == "Could not determine type of stream.")

            // Still playing at the tick: nothing yet.
            h.engine.advance(by: .seconds(1))
            h.tickClock.advance(by: .seconds(1))
            await h.player.tick()
            #expect(!h.engine.calls.contains { if case .load = $0 { true } else { false } }, "too early: \(h.engine.calls)")
            // At its end the engine stands still (playbin waits for the stream that failed): on with the file after.
            h.engine.advance(by: .seconds(1))
            for _ in 0..<2 {
                h.tickClock.advance(by: .seconds(1))
                await h.player.tick()
            }
            #expect(h.engine.calls.contains { if case .load(let url, let at) = $0 { url == fileURL(2) && at == .zero } else { false } },
                    "\(h.engine.calls)")
            #expect(h.log.lastState?.currentIndex == 2)
            #expect(h.log.lastState?.status == .playing)
            await h.ready(.seconds(100))
            #expect(h.engine.isPlaying)
        }
    }

    @Test func anEndOfStreamAfterABadNextFileGoesOnPastIt() async {
        await withHarness { h in
            await h.player.open(makeItems(3))
            await h.ready(.seconds(100))
            h.engine.advance(by: .seconds(98))
            await h.send(.nextFailed(fileURL(1), "Could not determine type of stream."))
            h.reset()
            await h.send(.endOfStream)
            #expect(h.engine.calls.contains { if case .load(let url, _) = $0 { url == fileURL(2) } else { false } }, "\(h.engine.calls)")
            #expect(h.log.lastState?.currentIndex == 2)
        }
    }
}

/// A frozen "Playing": the engine's position stands still, and no error or end of stream comes.
@Suite struct StallTests {
    /// Ticks the player once a second for `seconds` seconds of the manual clock, the engine's position not moving
    /// (or moving by `step` a tick).
    private func tick(_ h: Harness, seconds: Int, step: Duration = .zero) async {
        for _ in 0..<seconds {
            h.engine.advance(by: step)
            h.tickClock.advance(by: .seconds(1))
            await h.player.tick()
        }
    }

    /// The loads the engine was asked for, in order.
    private func loads(_ h: Harness) -> [URL] {
        h.engine.calls.compactMap { if case .load(let url, _) = $0 { url } else { nil } }
    }

    /// Moves the tick clock on by `step`, `count` times, and the engine's position by `engineStep` (by default the
    /// same); at each step, waits for what fell due on the clock (the tick loop, the player's wake-up) to run and
    /// sleep again, or for a load (after which no wake-up is planned until the file is ready).
    private func run(_ h: Harness, _ count: Int, step: Duration, engineStep: Duration? = nil) async {
        for _ in 0..<count {
            h.engine.advance(by: engineStep ?? step)
            h.tickClock.advance(by: step)
            await waitUntil("the tick loop and the wake-up to sleep again") {
                h.tickClock.sleeperCount == 2 || !loads(h).isEmpty
            }
        }
    }

    @Test func standingStillAtTheEndOfAFileLoadsTheNextOneWithinHalfASecond() async {
        await withHarness { h in
            await h.player.open(makeItems(3))
            await h.ready(.seconds(100))
            h.reset()
            await run(h, 1, step: .seconds(99.5))
            await run(h, 5, step: .milliseconds(100))   // the end of the file; the gapless handover hangs there
            let end = h.tickClock.now.offset
            await run(h, 20, step: .milliseconds(10), engineStep: .zero)
            #expect(loads(h) == [], "too early: \(h.engine.calls)")
            for _ in 0..<100 where loads(h).isEmpty {
                await run(h, 1, step: .milliseconds(10), engineStep: .zero)
            }
            let after = h.tickClock.now.offset - end
            #expect(after >= .milliseconds(250) && after <= .milliseconds(500), "loaded \(after) after the end")
            #expect(h.engine.calls.contains(.load(fileURL(1), at: .zero)), "\(h.engine.calls)")
            // The next file is loaded the ordinary way, not blamed: a slow one then plays, a damaged one fails.
            #expect(h.log.all.allSatisfy { if case .itemFailed = $0 { false } else { true } }, "\(h.log.all)")
            #expect(h.log.lastState?.currentIndex == 1)
            #expect(h.log.lastState?.status == .playing)
            await h.ready(.seconds(100))
            #expect(h.engine.isPlaying)
        }
    }

    @Test func aHandoverThatHappensIsLeftAlone() async {
        await withHarness { h in
            await h.player.open(makeItems(3))
            await h.ready(.seconds(100))
            h.reset()
            await run(h, 1, step: .seconds(99.5))
            await run(h, 5, step: .milliseconds(100))
            // The position stands at the end for less than the handover limit, then the next file starts.
            await run(h, 20, step: .milliseconds(10), engineStep: .zero)
            _ = await h.finish()
            await run(h, 20, step: .milliseconds(100))
            #expect(loads(h) == [], "\(h.engine.calls)")
            #expect(h.log.lastState?.currentIndex == 1)
            #expect(h.log.lastState?.status == .playing)
        }
    }

    @Test func theLastSecondOfAFileStillPlayingIsLeftAlone() async {
        await withHarness { h in
            await h.player.open(makeItems(3))
            await h.ready(.seconds(100))
            h.reset()
            await run(h, 1, step: .seconds(99))
            // In its last second, the position moving, 20 % slower than the player's clock (past the time the
            // file should have ended by that clock): nothing is loaded, however often the player looks.
            await run(h, 120, step: .milliseconds(10), engineStep: .milliseconds(8))
            #expect(loads(h) == [], "\(h.engine.calls)")
            #expect(await h.player.snapshot.currentIndex == 0)
        }
    }

    @Test func aStandstillInTheLastSecondButBeforeTheEndIsLeftAlone() async {
        await withHarness { h in
            await h.player.open(makeItems(3))
            await h.ready(.seconds(100))
            h.reset()
            // A seek that lands at 99.5 s and takes its time, or a sink still playing the previous file's sound: the
            // position stands still, but not at the end, and nothing failed.
            await run(h, 1, step: .seconds(99.5))
            await run(h, 100, step: .milliseconds(10), engineStep: .zero)
            #expect(loads(h) == [], "\(h.engine.calls)")
            #expect(await h.player.snapshot.currentIndex == 0)
        }
    }

    @Test func theWakeUpAtAFilesEndIsPlannedOnlyWhilePlaying() async {
        await withHarness { h in
            await h.player.open(makeItems(3))
            await h.ready(.seconds(100))
            await waitUntil("the tick loop and the wake-up at the file's end to sleep") { h.tickClock.sleeperCount == 2 }
            await h.player.pause()
            h.tickClock.advance(by: .seconds(1))  // the tick after the pause: the last one
            await waitUntil("no timer while paused") { h.tickClock.sleeperCount == 0 }
            await h.player.play()
            await waitUntil("both to sleep again") { h.tickClock.sleeperCount == 2 }
        }
    }

    @Test func standingStillAtTheEndOfTheLastFileIsAStall() async {
        await withHarness { h in
            await h.player.open(makeItems(3), startAt: 2)
            await h.ready(.seconds(100))
            h.engine.advance(by: .seconds(99.9))   // no next file: no handover to wait for, no end of stream either
            h.reset()
            await tick(h, seconds: 7)
            #expect(loads(h) == [], "\(h.engine.calls)")
            #expect(h.log.lastState?.status == .paused)
            #expect(h.log.lastState?.lastError?.contains("stood still") == true, "\(h.log.lastState?.lastError ?? "nil")")
        }
    }

    @Test func standingStillInsideAFilePausesThereAndPlayLoadsItAgain() async {
        await withHarness { h in
            await h.player.open(makeItems(3))
            await h.ready(.seconds(100))
            h.engine.advance(by: .seconds(30))
            h.reset()

            await tick(h, seconds: 7)
            let state = h.log.lastState
            #expect(state?.status == .paused)
            #expect(state?.lastError?.contains("stood still") == true, "\(state?.lastError ?? "nil")")
            #expect(state?.currentIndex == 0)
            #expect(h.engine.calls.contains(.pause))
            #expect(h.log.all.allSatisfy { if case .itemFailed = $0 { false } else { true } }, "no file is blamed")
            #expect(await h.player.position == .seconds(30))

            h.reset()
            await h.player.play()
            #expect(h.engine.calls.first == .load(fileURL(0), at: .seconds(30)))
        }
    }

    @Test func aLoadThatNeverCompletesIsTriedAgainThenGivenUp() async {
        await withHarness { h in
            await h.player.open(makeItems(3))   // playing; the engine never reports ready
            let stuck = await h.player.snapshot.queue[0].id
            func loads() -> [URL] { h.engine.calls.compactMap { if case .load(let url, _) = $0 { url } else { nil } } }
            #expect(loads() == [fileURL(0)])

            await tick(h, seconds: 4)
            #expect(loads() == [fileURL(0), fileURL(0)], "loaded again once")
            #expect(h.log.all.allSatisfy { if case .itemFailed = $0 { false } else { true } })

            await tick(h, seconds: 4)
            #expect(loads() == [fileURL(0), fileURL(0), fileURL(1)], "given up, the next file loads")
            #expect(h.log.all.contains { if case .itemFailed(let item, _, _) = $0 { item.id == stuck } else { false } })
            #expect(h.log.lastState?.status == .playing)
            #expect(h.log.lastState?.currentIndex == 1)
        }
    }

    @Test func aLoadThatCompletesInTimeIsNotRepeated() async {
        await withHarness { h in
            await h.player.open(makeItems(3))
            await tick(h, seconds: 2)
            await h.ready(.seconds(100))
            await tick(h, seconds: 10, step: .seconds(1))
            #expect(h.engine.calls.filter { if case .load = $0 { true } else { false } }.count == 1)
            #expect(h.log.lastState?.lastError == nil)
        }
    }

    @Test func aSlowButMovingPositionIsNotAStall() async {
        await withHarness { h in
            await h.player.open(makeItems(3))
            await h.ready(.seconds(100))
            await tick(h, seconds: 12, step: .milliseconds(100))
            #expect(h.log.lastState?.status == .playing)
            #expect(h.log.lastState?.lastError == nil)
            // Paused, nothing moves, and that is no stall either.
            await h.player.pause()
            await tick(h, seconds: 12)
            #expect(h.log.lastState?.status == .paused)
            #expect(h.log.lastState?.lastError == nil)
        }
    }
}
