import Foundation
import LecternCore
import Testing

// A book's intros and outros skipped: every file starts after its first 10 s and goes on to the next 5 s before its
// end; positions stay in the file's own time. Fake engine, manual clock.

/// 10 s of intro and 5 s of outro skipped.
private let skipping = PlaybackSettings(skip: SkipParts(intro: .seconds(10), outro: .seconds(5)))

extension Harness {
    /// Opens three files of 100 s (or `items`) with the parts skipped, and reports the first load ready.
    func openSkipping(_ items: [MediaItem] = makeItems(3), startAt: Int = 0, position: Duration = .zero,
                      play: Bool = true) async {
        await player.open(items, startAt: startAt, position: position, play: play, settings: skipping)
        await ready(items[startAt].duration)
    }

    /// The loads the player asked of the engine, in order.
    var loads: [FakeEngine.Call] { engine.calls.filter { if case .load = $0 { true } else { false } } }
}

@Suite struct SkipPartsTests {
    @Test func theBoundsAndAFileTooShortForBoth() {
        let parts = SkipParts(intro: .seconds(700), outro: .seconds(-3))
        #expect(parts.intro == SkipParts.maximum)
        #expect(parts.outro == .zero)
        #expect(SkipParts().isOff)

        let skip = SkipParts(intro: .seconds(10), outro: .seconds(5))
        #expect(skip.start(ofFileLasting: .seconds(100)) == .seconds(10))
        #expect(skip.end(ofFileLasting: .seconds(100)) == .seconds(95))
        // 15 s of a 15 s file would leave nothing: it plays whole; so does a file of unknown duration.
        #expect(skip.start(ofFileLasting: .seconds(15)) == .zero)
        #expect(skip.end(ofFileLasting: .seconds(15)) == .seconds(15))
        #expect(skip.start(ofFileLasting: nil) == .zero)
        #expect(skip.end(ofFileLasting: nil) == nil)
    }

    @Test func aBookStartsAfterTheIntroWithoutAGaplessNext() async {
        await withHarness { h in
            await h.openSkipping()
            #expect(h.loads == [.load(fileURL(0), at: .seconds(10))])
            // Each file is loaded at its start when the one before ends: no gapless next.
            #expect(h.engine.nextURL == nil)
            #expect(await h.player.position == .seconds(10))
            // The chapter starts at 0 in the file's own time: clients are told where in it playback is.
            #expect(h.log.seeks == [.seconds(10)])
        }
    }

    @Test func atTheOutroPlayingGoesOnToTheNextFileAfterItsIntro() async {
        await withHarness { h in
            await h.openSkipping()
            await h.play(for: .seconds(84), step: .seconds(1))
            #expect(h.engine.currentURL == fileURL(0), "still in the first file at 94 s")
            await h.play(for: .seconds(2), step: .milliseconds(500))
            #expect(h.loads == [.load(fileURL(0), at: .seconds(10)), .load(fileURL(1), at: .seconds(10))])
            let state = await h.player.snapshot
            #expect(state.currentIndex == 1)
            #expect(state.status == .playing)
        }
    }

    @Test func theOutroOfTheLastFileFinishesTheBook() async {
        await withHarness { h in
            await h.openSkipping(startAt: 2, position: .seconds(90))
            await h.play(for: .seconds(6), step: .milliseconds(500))
            #expect(h.log.all.last == .finished)
            #expect(await h.player.snapshot.status == .stopped)
        }
    }

    @Test func nextAndPreviousGoToTheFilesStartAfterTheIntro() async {
        await withHarness { h in
            await h.openSkipping(startAt: 1, position: .seconds(50))
            h.reset()
            await h.player.next()
            #expect(h.loads == [.load(fileURL(2), at: .seconds(10))])
            await h.ready(.seconds(100))

            // Just after the intro is the chapter's start for Previous: back to the file before, after its intro.
            await h.play(for: .seconds(1))
            h.reset()
            await h.player.previous()
            #expect(h.loads == [.load(fileURL(1), at: .seconds(10))])
            await h.ready(.seconds(100))

            // Later in it: back to its start, after the intro.
            await h.play(for: .seconds(20), step: .seconds(1))
            h.reset()
            await h.player.previous()
            #expect(h.engine.calls == [.seek(.seconds(10))])
            #expect(await h.player.position == .seconds(10))
        }
    }

    @Test func aChapterJumpToTheFilesStartSkipsTheIntroButNotToAMarkInsideIt() async throws {
        try await withHarness { h in
            await h.player.open(chapteredItems(), startAt: 0, settings: skipping)
            await h.ready(.seconds(100))
            // Chapter 1 is the start of the second file; chapter 2 its mark at 30 s.
            try await h.player.goTo(chapter: 1)
            #expect(h.loads.last == .load(fileURL(1), at: .seconds(10)))
            await h.ready(.seconds(100))
            h.reset()
            try await h.player.goTo(chapter: 2)
            #expect(h.engine.calls == [.seek(.seconds(30))])
        }
    }

    @Test func aFileShorterThanBothPartsPlaysWhole() async {
        await withHarness { h in
            var items = makeItems(2)
            items[1].duration = .seconds(12)
            await h.openSkipping(items, position: .seconds(90))
            await h.play(for: .seconds(6), step: .milliseconds(500))
            #expect(h.loads.last == .load(fileURL(1), at: .zero))
            await h.ready(.seconds(12))
            // Its end is its stream's: nothing moves on at 7 s.
            await h.play(for: .seconds(11), step: .seconds(1))
            #expect(await h.player.snapshot.currentIndex == 1)
            await h.finish()
            #expect(h.log.all.last == .finished)
        }
    }

    @Test func aSeekIntoASkippedPartIsHonoured() async throws {
        try await withHarness { h in
            await h.openSkipping()
            h.reset()
            try await h.player.jump(toFile: 0, at: .seconds(3))
            #expect(h.engine.calls == [.seek(.seconds(3))])

            // Into the outro: it plays to the file's end, and the next file starts after its intro.
            try await h.player.jump(toFile: 0, at: .seconds(97))
            await h.play(for: .seconds(2), step: .milliseconds(500))
            #expect(h.loads == [])
            #expect(await h.player.position == .seconds(99))
            await h.finish()
            #expect(h.loads == [.load(fileURL(1), at: .seconds(10))])
        }
    }

    @Test func theSavedPositionIsInTheFilesOwnTime() async throws {
        try await withHarness { h in
            await h.openSkipping(startAt: 1, position: .seconds(42))
            #expect(h.loads == [.load(fileURL(1), at: .seconds(42))])
            await h.play(for: .seconds(1))
            let playing = h.log.all.compactMap { event -> Duration? in
                if case .playing(_, let at) = event { at } else { nil }
            }
            let last = try #require(playing.last)
            #expect(abs((last - .seconds(43)) / .seconds(1)) < 0.1, "\(last)")
        }
    }

    @Test func theTimeLeftLeavesTheSkippedPartsOut() async throws {
        try await withHarness { h in
            await h.openSkipping(startAt: 1, position: .seconds(40))
            try await h.player.setRate(2)
            let progress = try #require(await h.player.progress)
            // The rest of file 1 (40 → 95 s), then file 2's 85 s played: 140 s at 2x.
            #expect(progress.remaining == .seconds(70))
            #expect(progress.chapterRemaining == .seconds(27.5))
            #expect(progress.bookLength == .seconds(300), "the book's length is its files'")
            #expect(progress.filePosition == .seconds(40))
            // A chapter's figures (MPRIS metadata) count from where it starts playing: the last file's 85 s.
            let last = await h.player.snapshot.progress(ofChapter: 2)
            #expect(last.remaining == .seconds(42.5) && last.chapterRemaining == .seconds(42.5))
            #expect(last.chapterPosition == .zero)
        }
    }

    @Test func turningItOnWhilePlayingKeepsThePlaceAndStopsTheGaplessNext() async throws {
        try await withHarness { h in
            await h.player.open(makeItems(2), startAt: 0, position: .seconds(97))
            await h.ready(.seconds(100))
            #expect(h.engine.nextURL == fileURL(1))
            h.reset()
            try await h.player.apply(skipping)
            #expect(h.engine.calls == [.setNext(nil)])
            // In the new outro already: it plays, the listener was there.
            await h.play(for: .seconds(2), step: .milliseconds(500))
            #expect(h.loads == [])
            await h.finish()
            #expect(h.loads == [.load(fileURL(1), at: .seconds(10))])
        }
    }
}
