"""The datasets ``llmexplore data`` can fetch: pinned upstream files with their sha256.

Each file is pinned to one upstream commit, so a fetched copy is byte-for-byte the one the
suite was checked against; the checksums are those of the files the suite was developed with.
Small published figures (BALROG's progression table, Crafter's reference scores) are not
here: they ship inside the package (``llmexplore/data/packaged``).
"""

from __future__ import annotations

from dataclasses import dataclass

from llmexplore.errors import DataError, shown

GITHUB_RAW = "https://raw.githubusercontent.com"


@dataclass(frozen=True)
class DataFile:
    """One file of a dataset: where it goes in the data folder and where it comes from upstream."""

    path: str  # relative to the dataset's folder
    upstream: str  # relative to the upstream repository at the pinned commit
    sha256: str
    size: int


@dataclass(frozen=True)
class Dataset:
    name: str
    description: str
    repository: str  # owner/name on GitHub
    commit: str
    licence: str
    files: tuple[DataFile, ...]
    env_var: str  # points at the dataset's folder directly

    def url(self, file: DataFile) -> str:
        """Where one of the dataset's files is downloaded from (its pinned commit)."""
        return f"{GITHUB_RAW}/{self.repository}/{self.commit}/{file.upstream}"

    @property
    def size(self) -> int:
        """The dataset's size in bytes."""
        return sum(f.size for f in self.files)

    @property
    def source(self) -> str:
        """Repository, commit and licence, for listings."""
        return f"github.com/{self.repository} at commit {self.commit[:12]} ({self.licence})"


def _housekeep_files() -> tuple[DataFile, ...]:
    amt = "cos_eor/scripts/orm/amt_data"
    episodes = "data/datasets/cos_eor_v11_pruned"
    rows = [
        ("LICENSE", "LICENSE", "5f50a345a79a82bdfeaec3aac8025735f441793393aa8d20ec4dade9729aee78", 1080),
        ("amt_data/data.npy", f"{amt}/data.npy",
         "40d083e88eaf4d2eee644c35525c48c44668626f409dd7e76bf99f64aba8f2ca", 2788628),
        ("amt_data/objects.txt", f"{amt}/objects.txt",
         "281f16acada462a3cd14337c6747909fe8e2806c32ca4847e853e72bdb877d2f", 3200),
        ("amt_data/room_recep.txt", f"{amt}/room_recep.txt",
         "0d02c90240a11b949d86ace4a3232d91d8e7fb9737f2c747c9df7fc69ce4bbe4", 2404),
        ("amt_data/readme.txt", f"{amt}/readme.txt",
         "5a9f149ebe1673e4fafcee27b6291285fb73503d55c2ec4a6a792e6e3fca36cf", 280),
    ]
    scenes = [
        ("test/Beechwood_1", "93fd4526a3af2c25349c5ed6a79435d67e3c0927c20a444f94bb338dcdebd458", 3740428),
        ("test/Benevolence_1", "dd5e0a2487b56b5b1107989cc94b71eb09c5aa1548f2d27075724d641dcdc5f3", 1857828),
        ("test/Ihlen_0", "87679e804abf0ca7d948f617236951d99ee7a0e69b4255f554aad1d7ddbe36b5", 722372),
        ("test/Merom_0", "9a03c441bbbe0c84c86af41b76f1cf9c2799bbacf61ab974658d4efd572932ae", 3127460),
        ("train/Benevolence_2", "f50a455069314ef5a6757cc29a505ae1423d99c0ce98cd50826d2fb82a100e83", 1618431),
        ("train/Pomaria_0", "e58525e8989d7a2c0cfdcec4f670dd9c52c43d6ef4382cc32ec86f419064d4cf", 1995606),
        ("train/Pomaria_2", "76e9a1564a13a74357ee06db5a9a161e5f0928ff03f08d655fd0f4413512ee74", 1543632),
        ("val/Ihlen_1", "419bc8e56cafd752f5ec142c6e9c7b136cdf341c8a3ef9bc5cc6c2f438cddb56", 2034038),
        ("val/Merom_1", "abb55094c0d5c20f2e6833344c246aafbf1b2f5075476efe7a733b26b45b664c", 1887760),
    ]
    rows += [(f"episodes/{s}_int.json.gz", f"{episodes}/{s}_int.json.gz", h, n) for s, h, n in scenes]
    return tuple(DataFile(*row) for row in rows)


DATASETS: dict[str, Dataset] = {
    d.name: d
    for d in (
        Dataset(
            name="housekeep",
            description="Housekeep's human placement annotations and the episodes of 9 of its 14 scenes",
            repository="yashkant/housekeep",
            commit="2ff3ed01606f3bcf0308b8f7b29dcf634616c4da",
            licence="MIT",
            files=_housekeep_files(),
            env_var="LLMEXPLORE_HOUSEKEEP_DATA",
        ),
        Dataset(
            name="crafter",
            description="Crafter's published per-episode stats of the random agent and of human experts",
            repository="danijar/crafter",
            commit="d751a98bbca8fd4494e67ea4326dca562f0800d4",
            licence="MIT",
            files=(
                DataFile("LICENSE", "LICENSE",
                         "6285a75f47dc7fef3f0005a83364e3a24b6e7738b8bd64266ad10fe3afde8bc7", 1058),
                DataFile("crafter_noreward-random.json", "scores/crafter_noreward-random.json",
                         "05c69c6212c9cc7ab21927ec32560a03c64def0eb0c517c645d87539d0746d7f", 2648191),
                DataFile("crafter_reward-human.json", "scores/crafter_reward-human.json",
                         "877aac7b5723091c3361182e148b9f0231c621752af8e2597fe383ee35835518", 12386),
            ),
            env_var="LLMEXPLORE_CRAFTER_REFERENCE",
        ),
    )
}


def dataset(name: str) -> Dataset:
    """A dataset of the catalog by name; a DataError naming the known ones otherwise."""
    try:
        return DATASETS[name]
    except KeyError:
        raise DataError(f"unknown dataset {shown(name)}",
                        hint=f"one of: {', '.join(sorted(DATASETS))} (`llmexplore data list`)") from None


def fetch_command(name: str) -> str:
    """The command a user runs to get a dataset; error messages quote it."""
    return f"llmexplore data fetch {name}"
