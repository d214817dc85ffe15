"""The suite's parallel workers keep the groups tests/conftest.py gives them (`make test`: `-n 4 --dist loadgroup`).

pytest-xdist 3.8 marks a grouped test by a `@group` suffix on its node id, which pytest 9 no longer reads back
(hence `pytest<9` in the test extra): the groups were silently dropped, and two Ray tests ran at once and each
counted the other's processes as left behind.
"""
from tests.test_backend_ray import no_ray_left  # noqa: F401 (a fixture: pytest finds it by this name)


def test_a_test_on_a_shared_service_runs_in_its_group_under_loadgroup(no_ray_left, request):  # noqa: F811
    if getattr(request.config.option, "loadgroup", False):  # set in each worker of `--dist loadgroup`
        assert request.node.nodeid.endswith("@cluster"), request.node.nodeid
