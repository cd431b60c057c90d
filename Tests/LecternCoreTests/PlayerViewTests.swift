import Foundation
import LecternCore
import Synchronization
import Testing

/// `Player.view`: the one published copy of the player's state that the D-Bus faces read.
@Suite struct PlayerViewTests {
    /// Reads the view from inside the observer call: what a Get answered on another thread would see then.
    final class ViewReader: PlayerObserver {
        let view = Mutex<PlayerView?>(nil)
        let seen = Mutex<[(told: PlayerState, read: PlayerState?)]>([])
        func handle(_ event: PlayerEvent) {
            guard case .stateChanged(let state, _) = event else { return }
            let read = view.withLock { $0 }?.state
            seen.withLock { $0.append((state, read)) }
        }
    }

    @Test func observersFindTheStateTheyAreToldOfAlreadyInTheView() async throws {
        let reader = ViewReader()
        let log = EventLog()
        let player = Player(engine: FakeEngine(), tickClock: ManualClock(), observers: [reader, log])
        reader.view.withLock { $0 = player.view }
        await player.open(makeItems(3), startAt: 1, position: .seconds(30))
        try await player.setVolume(0.5)
        await player.next()

        let seen = reader.seen.withLock { $0 }
        #expect(seen.count >= 3)
        #expect(seen.allSatisfy { $0.told == $0.read })
        #expect(player.view.state == (await player.snapshot))
        #expect(player.view.state.volume == 0.5)
        #expect(player.view.state.currentIndex == 2)
        // Every observer hears the same events, in the same order.
        #expect(log.states == seen.map(\.told))
    }

    @Test func eachStateChangeCarriesTheStatePublishedBeforeIt() async throws {
        try await withHarness { h in
            await h.player.open(makeItems(2))
            await h.ready(.seconds(100))
            try await h.player.setRate(1.5)
            await h.player.pause()
            let changes = h.log.all.compactMap { event -> (PlayerState, PlayerState)? in
                if case .stateChanged(let state, let previous) = event { (state, previous) } else { nil }
            }
            #expect(changes.count >= 3)
            #expect(changes.first?.1 == PlayerState())
            for (earlier, later) in zip(changes, changes.dropFirst()) {
                #expect(later.1 == earlier.0)
            }
        }
    }

    @Test func theViewCountsTheSleepTimerTheWayThePlayerDoes() async throws {
        try await withHarness { h in
            await h.player.open(makeItems(2))
            await h.ready(.seconds(100))
            #expect(h.player.view.sleepTimeLeft() == nil)
            try await h.player.setSleepTimer(.after(.seconds(30)))
            await h.play(for: .seconds(10))
            await h.player.pause()
            #expect(h.player.view.sleepTimeLeft() == .seconds(20))
            #expect(await h.player.sleepTimeLeft == .seconds(20))

            // The same timer set again: nothing a client sees in the state changes, the time left does.
            try await h.player.setSleepTimer(.after(.seconds(30)))
            #expect(h.player.view.sleepTimeLeft() == .seconds(30))

            try await h.player.setSleepTimer(nil)
            #expect(h.player.view.sleepTimeLeft() == nil)
        }
    }
}

/// What a listener reads in the player's refusals and figures: files and chapters counted from 1, times as m:ss.
@Suite struct ListenerUnitsTests {
    @Test func refusalsCountFromOneAndSayTimesAsAListenerReadsThem() async {
        await withHarness { h in
            await h.player.open(makeItems(3))
            await h.ready(.seconds(100))
            func jumpRefusal(_ file: Int, _ at: Duration) async -> String? {
                do { try await h.player.jump(toFile: file, at: at); return nil } catch { return "\(error)" }
            }
            #expect(await jumpRefusal(98, .zero) == "there is no file 99: 3 files, from 1")
            #expect(await jumpRefusal(1, .seconds(200)) == "file 2 is 1:40 long: 3:20 is past its end")
            #expect(await jumpRefusal(1, .microseconds(-1)) == "a position in a file counts from 0:00: it cannot be negative")
            do {
                try await h.player.goTo(chapter: 76)
                Issue.record("chapter 77 of 3 was accepted")
            } catch {
                #expect("\(error)" == "there is no chapter 77: 3 chapters, from 1")
            }
            #expect(await h.player.snapshot.currentIndex == 0, "nothing changed")
        }
    }

    @Test func clockTimes() {
        #expect(Duration.zero.clock == "0:00")
        #expect(Duration.seconds(5.5).clock == "0:05.5")
        #expect(Duration.seconds(200).clock == "3:20")
        #expect(Duration.seconds(3723).clock == "1:02:03")
        #expect((Duration.zero - .seconds(15)).clock == "-0:15")
    }

    @Test func aVolumeNoListenerCouldChooseIsNotKept() async throws {
        try await withHarness { h in
            await h.player.open(makeItems(1))
            try await h.player.setVolume(Double("2.2e-308")!)  // what an outside fuzzer set
            #expect(await h.player.snapshot.volume == 0)
            try await h.player.setVolume(11)
            #expect(await h.player.snapshot.volume == 10)
            try await h.player.setVolume(0.25)
            #expect(await h.player.snapshot.volume == 0.25)
            try await h.player.apply(PlaybackSettings(volume: 1e-9, rate: 1))
            #expect(await h.player.snapshot.volume == 0)
        }
    }
}
