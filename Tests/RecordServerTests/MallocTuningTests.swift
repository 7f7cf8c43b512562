#if canImport(Glibc)
import CMallocTuning
import Glibc
@testable import RecordServerCore
import Testing

/// record-server returns memory freed by connections that came and went (issue 14): a 128 KiB
/// mmap threshold and trim threshold at start-up, and a whole-heap trim every few seconds.
/// Until this test, the C shim tested `__GLIBC__` before including any libc header, so both
/// functions were the non-glibc stubs: nothing was ever set or trimmed (RSS stayed ~40 MiB up
/// after 1200 connections had closed; a trim from a debugger gave it back).
@Suite("glibc allocator tuning")
struct MallocTuningTests {
    @Test func theSettingsTakeEffect() {
        #expect(cmalloc_return_freed_memory(RecordServerCommand.mmapThreshold) == 1)
    }

    @Test func aTrimReturnsMemoryFreedBetweenLiveBlocks() throws {
        // 32 MiB in 4 KiB blocks, every 64th kept: the freed runs lie between live blocks,
        // where only a whole-heap trim (not the top-of-heap one) can return them.
        let blocks = try (0..<8192).map { _ in try #require(malloc(4096)) }
        for (index, block) in blocks.enumerated() {
            memset(block, 1, 4096)
            if index % 64 != 0 { free(block) }
        }
        #expect(cmalloc_trim() == 1, "malloc_trim(0) released pages")
        for (index, block) in blocks.enumerated() where index % 64 == 0 { free(block) }
    }
}
#endif
