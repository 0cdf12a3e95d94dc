// Marker standing where Catch2 v3's header would be.
#pragma once
