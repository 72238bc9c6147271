# multiloop's pool example with pin_to (docs/API.md, quick example 1), with
# only the import changed.
import asyncio

import ferroloop.toolkit as multiloop


async def heavy_task(x: int) -> int:
    await asyncio.sleep(0.01)  # simulated work
    return x * 2


async def main():
    async with multiloop.EventLoopThreadPool(num_threads=2) as pool:
        fut1 = pool.submit(heavy_task, 21)
        fut2 = pool.submit(heavy_task, 21, pin_to=0)  # pinned to worker 0
        results = await asyncio.gather(fut1, fut2)
        print(results)  # [42, 42]


if __name__ == "__main__":
    asyncio.run(main())
